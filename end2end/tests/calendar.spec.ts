import { type Page } from "@playwright/test";
import { drag, expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1600, height: 1000 }, timezoneId: "America/Sao_Paulo" });

async function waitForHydration(page: Page) {
  // The page reloads once the browser has reported its time zone.
  await expect(page.locator(".calendar-toolbar .lede")).toContainText("America/Sao_Paulo");
  await expect(page.locator(".calendar-layout")).toHaveAttribute("data-hydrated", "true");
}

test("the week calendar shows every GPU, bookings and the now-line", async ({ page }) => {
  await signIn(page, "the demo user", "/calendar");
  await waitForHydration(page);
  await expect(page.locator(".cal-row")).toHaveCount(16);
  await expect(page.locator(".calendar-page .cal-scale .cal-now")).toBeVisible();
  await snapshot(page, "calendar-week");
});

test("a user books by dragging, another sees it booked, and a clash offers the nearest window", async ({ browser }) => {
  const first = await browser.newContext({ locale: "en-US", viewport: { width: 1600, height: 1000 }, timezoneId: "America/Sao_Paulo" });
  const page = await first.newPage();
  // Day view of the day after tomorrow: an L40S row (few demo bookings at night).
  const day = new Date(Date.now() + 2 * 86400000).toISOString().slice(0, 10);
  const url = `/calendar?start=${day}&span=day&model=NVIDIA%20L40S`;
  await signIn(page, "the demo user", url);
  await waitForHydration(page);
  const gpuId = (await page.locator(".cal-track").first().getAttribute("data-gpu"))!;
  // 02:00 to 04:00 local time.
  await drag(page, gpuId, 2 / 24 + 0.001, 4 / 24 - 0.002);
  const panel = page.locator(".calendar-side .panel").first();
  await expect(panel).toContainText("02:00 –");
  await expect(panel).toContainText("04:00");
  await expect(panel.locator(".panel-price")).toContainText("$");
  await snapshot(page, "calendar-selection");
  await panel.getByRole("button", { name: "Book", exact: true }).click();
  await expect(page.getByRole("status")).toContainText("Booked: reservation #");
  await expect(page.locator(`.cal-track[data-gpu="${gpuId}"] .cal-block[data-kind="mine"]`).first()).toBeVisible();
  await snapshot(page, "calendar-booked");

  const second = await browser.newContext({ locale: "en-US", viewport: { width: 1600, height: 1000 }, timezoneId: "America/Sao_Paulo" });
  const other = await second.newPage();
  await signIn(other, "the demo team admin", url);
  await waitForHydration(other);
  const taken = other.locator(`.cal-track[data-gpu="${gpuId}"] .cal-block[data-kind="booked"]`);
  await expect(taken.first()).toBeVisible();
  await expect(other.locator(`.cal-track[data-gpu="${gpuId}"]`)).not.toContainText("Demo User");
  await drag(other, gpuId, 3 / 24 + 0.001, 5 / 24 - 0.002);
  await other.locator(".calendar-side .panel").first().getByRole("button", { name: "Book", exact: true }).click();
  const clash = other.locator(".clash");
  await expect(clash).toContainText("Already taken");
  await expect(clash).toContainText("The nearest window that fits:");
  await snapshot(other, "calendar-clash");
  await clash.getByRole("button", { name: "Book this" }).click();
  await expect(other.getByRole("status")).toContainText("Booked: reservation #");

  // The first user finds the booking under My reservations and cancels it.
  await page.goto("/reservations");
  await expect(page.getByRole("heading", { level: 1, name: "My reservations" })).toBeVisible();
  const row = page.locator("tr[data-status='confirmed']").filter({ hasText: "NVIDIA L40S" }).first();
  await expect(row).toBeVisible();
  await snapshot(page, "my-reservations");
  await row.getByRole("button", { name: /Cancel reservation/ }).click();
  await expect(page.locator("tr[data-status='cancelled']").first()).toBeVisible();
  await first.close();
  await second.close();
});
