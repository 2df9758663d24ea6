import { drag, expect, test, signIn, snapshot } from "./helpers";

const options = { locale: "en-US", viewport: { width: 1440, height: 900 }, timezoneId: "America/Sao_Paulo" };
const MODEL = "NVIDIA L40S";

// Six days ahead, 14:00 to 18:00 local time: no demo booking on the L40S then.
test("the calendar marks bookings that borrow a team's guaranteed GPUs, and the panel says when a booking would", async ({ browser, baseURL }) => {
  const headers = { Origin: baseURL! };
  // A platform admin guarantees Demo Lab one of the two demo L40S: one GPU is nobody's.
  const platform = await (await browser.newContext(options)).newPage();
  await signIn(platform, "the demo platform admin", "/teams");
  await platform.getByRole("link", { name: "Demo Lab" }).click();
  const team = new URL(platform.url()).pathname.split("/").pop()!;
  const quotaPath = `/api/v1/teams/${team}/quotas/${encodeURIComponent(MODEL)}`;
  const set = await platform.request.put(quotaPath, { headers, data: { guaranteed_gpus: 1 } });
  expect(set.status(), await set.text()).toBe(200);

  const day = new Date(Date.now() + 6 * 86400000).toISOString().slice(0, 10);
  const url = `/calendar?start=${day}&span=day&model=${encodeURIComponent(MODEL)}`;
  const booked: { page: typeof platform; id: string }[] = [];
  const bookOn = async (page: typeof platform, row: "first" | "last", from: number, to: number) => {
    await page.goto(url);
    await expect(page.locator(".calendar-toolbar .lede")).toContainText("America/Sao_Paulo");
    await expect(page.locator(".calendar-layout")).toHaveAttribute("data-hydrated", "true");
    const track = page.locator(".cal-track")[row]();
    const gpu = (await track.getAttribute("data-gpu"))!;
    await drag(page, gpu, from / 24 + 0.001, to / 24 - 0.002);
    await page.locator(".calendar-side .panel").first().getByRole("button", { name: "Book", exact: true }).click();
    await page.waitForURL(/booked=\d+/);
    booked.push({ page, id: new URL(page.url()).searchParams.get("booked")! });
    return gpu;
  };

  try {
    // Two personal bookings at the same time: the later one borrows the team's GPU.
    const person = await (await browser.newContext(options)).newPage();
    await signIn(person, "the demo team admin", url);
    const first = await bookOn(person, "first", 14, 18);
    const second = await bookOn(platform, "last", 14, 16);

    await person.goto(url);
    await expect(person.locator(".calendar-layout")).toHaveAttribute("data-hydrated", "true");
    await expect(person.locator(`.cal-track[data-gpu="${second}"] .cal-block[data-borrowing="true"]`)).toHaveCount(1);
    await expect(person.locator(`.cal-track[data-gpu="${first}"] .cal-block[data-borrowing="true"]`)).toHaveCount(0);
    await expect(person.locator(`.cal-track[data-gpu="${second}"] .cal-block`).first()).toHaveAttribute("title", /borrowing/);

    // Another personal booking next to the first would borrow too: the panel says so, and not
    // for a booking within the team's guarantee.
    await drag(person, second, 16 / 24 + 0.001, 18 / 24 - 0.002);
    const panel = person.locator(".calendar-side .panel").first();
    await expect(panel.locator(".panel-borrow")).toContainText("would borrow GPUs guaranteed to a team");
    await snapshot(person, "calendar-borrowing");
    await panel.locator("select[name='team_id']").selectOption({ label: "Demo Lab" });
    await expect(panel.locator(".panel-borrow")).toHaveCount(0);
  } finally {
    for (const { page, id } of booked) {
      const cancelled = await page.request.delete(`/api/v1/reservations/${id}`, { headers });
      expect(cancelled.status(), await cancelled.text()).toBeLessThan(300);
    }
    const removed = await platform.request.delete(quotaPath, { headers });
    expect(removed.status(), await removed.text()).toBeLessThan(300);
  }
});
