import { drag, expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1440, height: 900 }, timezoneId: "America/Sao_Paulo" });

test("a flexible batch booking from the panel may start early, as My reservations says", async ({ page, baseURL }) => {
  // The demo team admin (the specs that read the demo user's wallet see nothing of it); day
  // view five days ahead, the last L40S row, 14:00 to 16:00 local time.
  const day = new Date(Date.now() + 5 * 86400000).toISOString().slice(0, 10);
  await signIn(page, "the demo team admin", `/calendar?start=${day}&span=day&model=NVIDIA%20L40S`);
  await expect(page.locator(".calendar-toolbar .lede")).toContainText("America/Sao_Paulo");
  await expect(page.locator(".calendar-layout")).toHaveAttribute("data-hydrated", "true");
  await expect(page.locator(".cal-legend")).toContainText("borrowing");
  const gpuId = (await page.locator(".cal-track").last().getAttribute("data-gpu"))!;
  await drag(page, gpuId, 14 / 24 + 0.001, 16 / 24 - 0.002);
  const panel = page.locator(".calendar-side .panel").first();
  const flexible = panel.getByRole("checkbox", { name: /Flexible batch booking/ });
  await expect(flexible).not.toBeChecked();
  await flexible.check();
  await expect(panel).toContainText("Starts early if its GPU frees up before the start");
  await snapshot(page, "calendar-flexible");
  await panel.getByRole("button", { name: "Book", exact: true }).click();
  await expect(page.getByRole("status")).toContainText("Booked: reservation #");
  await page.waitForURL(/booked=\d+/);
  const id = new URL(page.url()).searchParams.get("booked")!;

  // Booked at batch priority, asking to start early.
  const booked = await (await page.request.get(`/api/v1/reservations/${id}`)).json();
  expect(booked.priority).toBe("batch");
  expect(booked.start_early).toBe(true);
  expect(booked.preemptible).toBe(true);

  await page.goto("/reservations");
  const row = page.locator(`tr:has(a[href="/reservations/${id}"])`);
  await expect(row).toContainText("Starts early if its GPU frees up");
  await snapshot(page, "reservations-flexible");
  await page.goto(`/reservations/${id}`);
  await expect(page.locator(".early-note")).toContainText("Starts early if its GPU frees up");

  // Cancelled again (refunded), so the other specs find the day as it was.
  const cancelled = await page.request.delete(`/api/v1/reservations/${id}`, { headers: { Origin: baseURL! } });
  expect(cancelled.status(), await cancelled.text()).toBeLessThan(300);
});
