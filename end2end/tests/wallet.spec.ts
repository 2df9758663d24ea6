import { type Page } from "@playwright/test";
import { expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1600, height: 1000 }, timezoneId: "America/Sao_Paulo" });

async function balanceMinor(page: Page): Promise<number> {
  await page.goto("/wallet");
  const amount = page.locator(".wallet-balance-amount");
  await expect(amount).toBeVisible();
  return Number(await amount.getAttribute("data-balance-minor"));
}

async function calendarReady(page: Page) {
  await expect(page.locator(".calendar-toolbar .lede")).toContainText("America/Sao_Paulo");
  await expect(page.locator(".calendar-layout")).toHaveAttribute("data-hydrated", "true");
}

test("a booking is paid from the wallet, and a booking the wallet cannot pay is refused", async ({ page }) => {
  // The demo accounts start with demo credits.
  await signIn(page, "the demo user", "/wallet");
  await expect(page.getByRole("heading", { level: 1, name: "Wallet" })).toBeVisible();
  await expect(page.locator("tr[data-kind='grant']").last()).toContainText("Demo credits");
  const before = await balanceMinor(page);
  expect(before).toBeGreaterThan(0);

  // Book two hours of an L40S three days ahead by dragging on the day view.
  const day = new Date(Date.now() + 3 * 86400000).toISOString().slice(0, 10);
  await page.goto(`/calendar?start=${day}&span=day&model=NVIDIA%20L40S`);
  await calendarReady(page);
  const track = page.locator(".cal-track").nth(1);
  const box = (await track.boundingBox())!;
  const y = box.y + box.height / 2;
  await page.mouse.move(box.x + box.width * (1 / 24 + 0.001), y);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * (2 / 24), y, { steps: 4 });
  await page.mouse.move(box.x + box.width * (3 / 24 - 0.002), y, { steps: 4 });
  await page.mouse.up();
  const panel = page.locator(".calendar-side .panel").first();
  const priceText = await panel.locator(".panel-price").innerText();
  const quoted = Math.round(Number(priceText.replace(/[^\d.]/g, "")) * 100);
  // The panel shows the wallet's balance once this booking is paid.
  await expect(panel.locator(".panel-balance-after")).toHaveAttribute("data-balance-after-minor", String(before - quoted));
  await snapshot(page, "calendar-quote");
  await panel.getByRole("button", { name: "Book", exact: true }).click();
  await expect(page.getByRole("status")).toContainText("Booked: reservation #");
  const id = (await page.getByRole("status").innerText()).match(/#(\d+)/)![1];

  // The wallet shows the charge, and the balance dropped by the quoted price.
  const after = await balanceMinor(page);
  const price = Math.round(Number(priceText.replace(/[^\d.]/g, "")) * 100);
  expect(before - after).toBe(price);
  const charge = page.locator("tr[data-kind='charge']").first();
  await expect(charge).toContainText("Reservation paid");
  await expect(charge.getByRole("link", { name: /^reservation #\d+$/ })).toBeVisible();
  await snapshot(page, "wallet");

  // Two weeks of an H100 cost more than the demo credits: refused, saying what is missing.
  await page.goto("/calendar");
  await calendarReady(page);
  const find = page.locator("form.find-form");
  await find.locator("select[name=model]").selectOption("NVIDIA H100 80GB HBM3");
  await find.locator("input[name=hours]").fill("336");
  await find.getByRole("button").click();
  await page.getByRole("button", { name: "Book this" }).first().click();
  // Said by the server in the reader's language, the amount written the local way.
  await expect(page.getByRole("alert")).toContainText(/Not enough credits: \$[\d,]+\.\d\d more needed\./);
  await snapshot(page, "calendar-insufficient-funds");
  expect(await balanceMinor(page)).toBe(after);

  // Cancelling the paid booking ahead of time shows and gives the refund.
  await page.goto("/reservations");
  const mine = (status: string) =>
    page.locator(`tr[data-status='${status}']`).filter({ has: page.locator("td", { hasText: new RegExp(`^${id}$`) }) });
  const row = mine("confirmed");
  await expect(row.locator(".refund-note")).toContainText("Cancelling now refunds");
  await row.getByRole("button", { name: /Cancel reservation/ }).click();
  await expect(mine("cancelled")).toContainText("refunded");
  await snapshot(page, "reservations-refunded");
  expect(await balanceMinor(page)).toBe(before);
});

test("a platform admin adds credits on the credits page, and the user sees them", async ({ page }) => {
  await signIn(page, "the demo platform admin", "/admin/credits");
  await expect(page.getByRole("heading", { level: 1, name: "Credits" })).toBeVisible();
  const row = page.locator("tr[data-email='demo-admin@berth.invalid']");
  const before = await row.locator("td.num").innerText();
  const form = page.locator("form.credits-form");
  await form.locator("input[name=email]").fill("demo-admin@berth.invalid");
  await form.getByLabel("Add credits").check();
  await form.getByLabel(/Amount/).fill("25,50");
  await form.getByLabel(/Reason/).fill("Invoice 12, “março”");
  await form.getByRole("button", { name: "Record" }).click();
  await expect(page.getByRole("status")).toContainText("Done: ledger transaction #");
  const after = await row.locator("td.num").innerText();
  const cents = (text: string) => Math.round(Number(text.replace(/[^\d.]/g, "")) * 100);
  expect(cents(after) - cents(before)).toBe(2550);
  await snapshot(page, "admin-credits");

  // A bad amount is refused with a message, and nothing changes (the recorded form came back
  // empty: the address is typed again).
  await form.locator("input[name=email]").fill("demo-admin@berth.invalid");
  await form.getByLabel(/Amount/).fill("12.345");
  await form.getByLabel(/Reason/).fill("typo");
  await form.getByRole("button", { name: "Record" }).click();
  await expect(page.getByRole("alert")).toContainText("“12.345” is not an amount such as 100.50");
  expect(await row.locator("td.num").innerText()).toBe(after);

  await page.goto("/wallet");
  await expect(page.locator("tr[data-kind='grant']").first()).toContainText("Invoice 12, “março”");
  await page.getByRole("button", { name: "Português (Brasil)" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Carteira" })).toBeVisible();
  await expect(page.locator("tr[data-kind='grant']").first()).toContainText("Créditos adicionados");
  await snapshot(page, "wallet-pt-BR");
});

test.describe("in Portuguese", () => {
test.use({ locale: "pt-BR" });

test("a booking paid before its start is held and shown with its charge time", async ({ page }) => {
  await page.goto("/wallet");
  await page.getByRole("button", { name: "Entrar como usuário de demonstração" }).click();
  await expect(page).toHaveURL(/\/wallet/);
  const before = Number(await page.locator(".wallet-balance-amount").getAttribute("data-balance-minor"));

  // Four days ahead, an L40S for two hours, paid two hours before the start.
  const day = new Date(Date.now() + 4 * 86400000).toISOString().slice(0, 10);
  await page.goto(`/calendar?start=${day}&span=day&model=NVIDIA%20L40S`);
  await expect(page.locator(".calendar-layout")).toHaveAttribute("data-hydrated", "true");
  const track = page.locator(".cal-track").nth(0);
  const panel = page.locator(".calendar-side .panel").first();
  const charge = panel.locator("select[name=charge]");
  // Once in four full runs the first drag right after hydration was not taken (the panel kept
  // its empty form); a person drags again, and so does the test.
  await expect(async () => {
    const box = (await track.boundingBox())!;
    const y = box.y + box.height / 2;
    await page.mouse.move(box.x + box.width * (1 / 24 + 0.001), y);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * (3 / 24 - 0.002), y, { steps: 6 });
    await page.mouse.up();
    await expect(charge.locator("option")).toHaveText(["Pagar agora", "Pagar 2 h antes do início"], { timeout: 3000 });
    await charge.selectOption("before_start");
    await expect(panel.locator(".panel-balance-after")).toBeVisible({ timeout: 3000 });
  }).toPass({ timeout: 30000 });
  await snapshot(page, "calendar-pay-later-pt-BR");
  await panel.getByRole("button", { name: "Reservar", exact: true }).click();
  await expect(page.getByRole("status")).toContainText("Reservado: reserva nº");
  const id = (await page.getByRole("status").innerText()).match(/nº (\d+)/)![1];

  // Nothing charged yet: the price is held, and the reservation says when it is charged.
  await page.goto("/wallet");
  await expect(page.locator(".wallet-balance-amount")).toHaveAttribute("data-balance-minor", String(before));
  await expect(page.locator(".wallet-hold")).toContainText("Reservado para cobranças futuras");
  await snapshot(page, "wallet-on-hold-pt-BR");
  await page.goto("/reservations");
  const row = page.locator("tr[data-payment='pending']").filter({ has: page.locator("td", { hasText: new RegExp(`^${id}$`) }) });
  await expect(row.locator(".payment-note")).toContainText("cobrança em");
  await snapshot(page, "reservations-pending-pt-BR");
  // Cancelled before its charge: nothing to refund, nothing moved.
  await row.getByRole("button").click();
  await expect(page.locator("tr[data-status='cancelled']").filter({ has: page.locator("td", { hasText: new RegExp(`^${id}$`) }) })).toBeVisible();
  expect(await balanceMinor(page)).toBe(before);
});
});

test("platform admins see the payments that are due", async ({ page }) => {
  await signIn(page, "the demo platform admin", "/admin/payments");
  await expect(page.getByRole("heading", { level: 1, name: "Payments due" })).toBeVisible();
  await expect(page.locator(".payments")).toContainText(/No payment is due|Owner/);
  await snapshot(page, "payments-due");
});
