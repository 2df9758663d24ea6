import { expect, type Page } from "@playwright/test";

/** Keeps a full-page screenshot of every important screen in test-results/screens/. */
export async function snapshot(page: Page, name: string) {
  await page.screenshot({ path: `test-results/screens/${name}.png`, fullPage: true });
}

/**
 * Opens `path` signed out, follows the redirect to the sign-in page and signs in with the
 * development sign-in as `account`; ends back on `path`.
 */
export async function signIn(
  page: Page,
  account: "the demo user" | "the demo team admin" | "the demo platform admin" = "the demo user",
  path = "/",
) {
  await page.goto(path);
  await expect(page).toHaveURL(/\/signin\?return_to=/);
  await page.getByRole("button", { name: `Sign in as ${account}` }).click();
  await expect(page).not.toHaveURL(/\/signin/);
}
