import { drag, expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1440, height: 900 }, timezoneId: "America/Sao_Paulo" });

test("a booking rings the bell, the inbox tells it, and reading it clears the count", async ({ page }) => {
  // Day view four days ahead, the last L40S row, 06:00 to 08:00 local time.
  const day = new Date(Date.now() + 4 * 86400000).toISOString().slice(0, 10);
  await signIn(page, "the demo user", `/calendar?start=${day}&span=day&model=NVIDIA%20L40S`);
  await expect(page.locator(".calendar-toolbar .lede")).toContainText("America/Sao_Paulo");
  await expect(page.locator(".calendar-layout")).toHaveAttribute("data-hydrated", "true");
  const gpuId = (await page.locator(".cal-track").last().getAttribute("data-gpu"))!;
  await drag(page, gpuId, 6 / 24 + 0.001, 8 / 24 - 0.002);
  await page.locator(".calendar-side .panel").first().getByRole("button", { name: "Book", exact: true }).click();
  await expect(page.getByRole("status")).toContainText("Booked: reservation #");
  // The panel then reloads the calendar with the booking in the address; wait for it, or the
  // next navigation races it.
  await page.waitForURL(/booked=\d+/);
  await page.waitForLoadState("load");

  // The worker hands the confirmation out at once; the next page shows it under the bell.
  await expect
    .poll(async () => {
      await page.goto("/");
      return page.locator(".site-header .bell-count").count();
    })
    .toBe(1);
  await expect(page.locator(".site-header .bell")).toHaveAttribute("aria-label", /Inbox, \d+ unread/);
  await page.locator(".site-header .bell").click();
  await expect(page).toHaveURL(/\/inbox$/);
  const notice = page.locator('.notice[data-kind="booking_confirmed"]').first();
  await expect(notice).toContainText("Booking confirmed");
  await expect(notice).toContainText("NVIDIA L40S");
  await expect(notice).toContainText("06:00");
  await snapshot(page, "inbox");

  await page.getByRole("button", { name: "Mark all as read" }).click();
  await expect(page).toHaveURL(/\/inbox\?done=read$/);
  await expect(page.locator(".notice.unread")).toHaveCount(0);
  await expect(page.locator(".site-header .bell-count")).toHaveCount(0);
  await expect(page.locator(".inbox .hint")).toContainText("0 unread");
});
