import { expect, test } from "@playwright/test";

test.use({ locale: "en-US" });

test("dev sign-in shows the user in the header, and sign-out ends it", async ({ page }) => {
  await page.goto("/");
  await page.getByRole("link", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Sign in to Berth" })).toBeVisible();
  await page.screenshot({ path: "test-results/screens/sign-in.png", fullPage: true });

  await page.getByRole("button", { name: "Sign in as the demo user" }).click();
  await expect(page).toHaveURL(/\/$/);
  await expect(page.locator(".user-name")).toHaveText("Demo User");
  await expect(page.locator(".user-role")).toHaveText("user");
  await page.screenshot({ path: "test-results/screens/signed-in.png" });

  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page.getByRole("link", { name: "Sign in" })).toBeVisible();
});
