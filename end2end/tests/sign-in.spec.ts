import { expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US" });

test("a signed-out visitor is sent to sign-in and comes back to the page asked for", async ({ page }) => {
  await page.goto("/?model=NVIDIA%20L40S");
  await expect(page).toHaveURL(/\/signin\?return_to=%2F%3Fmodel%3DNVIDIA%2520L40S$/);
  await expect(page.getByRole("heading", { level: 1, name: "Sign in to Berth" })).toBeVisible();
  await snapshot(page, "sign-in");

  await page.getByRole("button", { name: "Sign in as the demo user" }).click();
  await expect(page).toHaveURL(/\/\?model=NVIDIA%20L40S$/);
  await expect(page.locator("tr.gpu-row")).toHaveCount(2);
  await expect(page.locator(".user-name")).toHaveText("Demo User");
  await expect(page.locator(".user-role")).toHaveText("user");
  await snapshot(page, "signed-in");

  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/signin$/);
  await page.goto("/");
  await expect(page).toHaveURL(/\/signin\?return_to=/);
});

test("the header names the team admin's role and team", async ({ page }) => {
  await signIn(page, "the demo team admin");
  await expect(page.locator(".user-name")).toHaveText("Demo Team Admin");
  await expect(page.locator(".user-role")).toHaveText("team admin · Demo Lab");
});

test("a personal API token is shown once, listed and revoked on the profile page", async ({ page, request }) => {
  await signIn(page, "the demo platform admin", "/profile");
  await expect(page.getByRole("heading", { level: 1, name: "Your profile" })).toBeVisible();
  await expect(page.getByText("platform admin").first()).toBeVisible();
  // Wait until the page is interactive, so the form is handled in place.
  await expect(page.locator("form.token-form")).toHaveAttribute("data-hydrated", "true");

  await page.getByLabel("Token name").fill("Nightly report");
  await page.getByRole("button", { name: "Create token" }).click();
  const secret = page.locator("code.token-secret");
  await expect(secret).toHaveText(/^berth_/);
  const token = (await secret.textContent())!.trim();
  await expect(page.getByRole("status")).toContainText("shown only this once");
  await expect(page.getByRole("cell", { name: "Nightly report", exact: true })).toBeVisible();
  await snapshot(page, "profile-token-created");

  const me = await request.get("/api/v1/me", { headers: { Authorization: `Bearer ${token}` } });
  expect(me.status()).toBe(200);
  expect((await me.json()).email).toBe("demo-admin@berth.invalid");

  await page.reload();
  await expect(page.locator("code.token-secret")).toHaveCount(0);
  await expect(page.getByRole("cell", { name: "Nightly report", exact: true })).toBeVisible();

  await page.getByRole("button", { name: "Revoke token Nightly report" }).click();
  await expect(page.getByText("You have no API tokens.")).toBeVisible();
  const revoked = await request.get("/api/v1/me", { headers: { Authorization: `Bearer ${token}` } });
  expect(revoked.status()).toBe(401);
  await snapshot(page, "profile-token-revoked");
});
