import { expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1400, height: 900 }, timezoneId: "America/Sao_Paulo" });

test("a time zone chosen on the profile page wins over the browser's, until reset", async ({ page }) => {
  await signIn(page, "the demo platform admin", "/profile");
  // Wait until the page is interactive, so the form is handled in place.
  await expect(page.locator("form.token-form")).toHaveAttribute("data-hydrated", "true");
  await page.getByLabel("Show times in").selectOption("Asia/Tokyo");
  await page.getByRole("button", { name: "Save time zone" }).click();
  await expect(page.getByRole("status")).toHaveText("Saved: times are shown in Asia/Tokyo.");
  await snapshot(page, "profile-time-zone");

  const loads: string[] = [];
  page.on("request", (request) => {
    if (request.resourceType() === "document") loads.push(new URL(request.url()).pathname);
  });
  await page.goto("/calendar");
  await expect(page.locator("form.find-form")).toBeVisible();
  await expect(page.locator(".calendar-toolbar .lede")).toContainText("Asia/Tokyo");
  // The browser's zone is told to the server once the page runs, but the chosen zone draws the
  // grid: the page is not loaded again for it.
  await expect(page.locator(".calendar-layout")).toHaveAttribute("data-hydrated", "true");
  await expect
    .poll(async () => (await page.context().cookies()).some((cookie) => cookie.name === "berth_tz"))
    .toBe(true);
  await page.waitForTimeout(1_000);
  expect(loads).toEqual(["/calendar"]);

  await page.goto("/profile");
  await expect(page.locator("form.token-form")).toHaveAttribute("data-hydrated", "true");
  await expect(page.getByLabel("Show times in")).toHaveValue("Asia/Tokyo");
  await page.getByLabel("Show times in").selectOption("");
  await page.getByRole("button", { name: "Save time zone" }).click();
  await expect(page.getByRole("status")).toHaveText("Saved: times follow your browser’s time zone.");
  await page.goto("/calendar");
  await expect(page.locator(".calendar-toolbar .lede")).toContainText("America/Sao_Paulo");
});
