import { drag, expect, test, signIn, snapshot } from "./helpers";

// Issue 28: cards through Stripe (localstripe here; see playwright.config.ts). Stripe.js draws the
// card field; the number goes to Stripe, and Berth reads the card back from Stripe. A top-up's
// credits arrive with Stripe's webhook.
test.use({ locale: "en-US", viewport: { width: 1400, height: 1000 }, timezoneId: "America/Sao_Paulo" });

test.beforeAll(async ({ request }) => {
  const response = await request.post("http://127.0.0.1:3211/_config/webhooks/berth", {
    form: { url: "http://127.0.0.1:3210/api/v1/stripe/webhook", secret: "whsec_test_berth" },
  });
  expect(response.ok()).toBeTruthy();
});

test("a user adds a card and tops up their credits with it", async ({ page }) => {
  await signIn(page, "the demo user", "/wallet");
  const cards = page.locator("section.cards");
  await expect(cards.getByRole("heading", { name: "Cards" })).toBeVisible();
  await expect(cards).toHaveAttribute("data-ready", "true");
  const before = Number(await page.locator(".wallet-balance-amount").getAttribute("data-balance-minor"));

  // The card field appears on the first press (Stripe.js's own; here localstripe's stand-in).
  await cards.getByRole("button", { name: "Enter card details" }).click();
  const field = cards.locator(".card-element");
  await expect(field.locator("input[placeholder='number']")).toBeVisible();
  await field.locator("input[placeholder='number']").fill("4242424242424242");
  await field.locator("input[placeholder='exp_month']").fill("12");
  await field.locator("input[placeholder='exp_year']").fill("30");
  await field.locator("input[placeholder='cvc']").fill("123");
  await field.locator("input[placeholder='postal_code']").fill("01310");
  await snapshot(page, "cards-add");
  await cards.getByRole("button", { name: "Save the card" }).click();
  await expect(cards.locator(".saved-card")).toContainText("4242");
  await expect(cards.locator(".saved-card")).toContainText("expires 12/2030");

  // A top-up of 25.00: the payment is sent, the credits come with Stripe's webhook.
  await cards.getByLabel("Amount").fill("25");
  await cards.getByRole("button", { name: "Pay and top up" }).click();
  await expect(page.locator("tr[data-status='succeeded']")).toContainText("Paid, credits added", { timeout: 30_000 });
  await expect(page.locator(".wallet-balance-amount")).toHaveAttribute("data-balance-minor", String(before + 2500));
  await expect(page.locator("tr[data-kind='grant']").first()).toContainText("Card top-up (pi_");
  await snapshot(page, "cards-topped-up");

  // Out of the limits: said on the page, nothing asked of Stripe.
  await cards.getByLabel("Amount").fill("1");
  await cards.getByRole("button", { name: "Pay and top up" }).click();
  await expect(cards.locator(".cards-status")).toContainText("Give an amount between");
  await expect(page.locator("tr[data-receipt]")).toHaveCount(1);

  // In Portuguese.
  await page.getByRole("button", { name: "Português (Brasil)" }).click();
  await expect(cards.getByRole("heading", { name: "Cartões" })).toBeVisible();
  await expect(page.locator("tr[data-status='succeeded']")).toContainText("Pago, créditos adicionados");
  await expect(cards.getByRole("button", { name: "Pagar e recarregar" })).toBeVisible();
  await snapshot(page, "cards-pt-BR");
  await page.getByRole("button", { name: "English" }).click();
  await expect(cards.getByRole("heading", { name: "Cards" })).toBeVisible();
});

test("a user books with their saved card from the calendar, and it is paid when Stripe confirms it", async ({ page }) => {
  // The card saved by the test above (the file's tests run in order, one worker).
  const day = new Date(Date.now() + 9 * 86400000).toISOString().slice(0, 10);
  await signIn(page, "the demo user", `/calendar?start=${day}&span=day`);
  await expect(page.locator(".calendar-layout")).toHaveAttribute("data-hydrated", "true");
  const gpuId = (await page.locator(".cal-track").first().getAttribute("data-gpu"))!;
  await drag(page, gpuId, 10 / 24 + 0.001, 11 / 24 - 0.002);
  const panel = page.locator(".calendar-side .panel").first();
  const payWith = panel.getByLabel("Pay with");
  await expect(payWith).toBeVisible();
  await payWith.selectOption({ label: "Visa ···· 4242" });
  // Paid by card: the wallet's balance after the booking is not part of it.
  await expect(panel.locator(".panel-balance-after")).toHaveCount(0);
  await snapshot(page, "cards-book-with-card");
  await panel.getByRole("button", { name: "Book", exact: true }).click();
  await page.waitForURL(/booked=\d+/);
  const id = new URL(page.url()).searchParams.get("booked")!;
  const note = page.locator(".budget-note");
  await expect(note).toContainText("Paid by card (Visa ···· 4242)");

  // Its page follows the payment: paid once Stripe's webhook reached Berth.
  await note.getByRole("link", { name: "Follow its card payment" }).click();
  await expect(page).toHaveURL(new RegExp(`/reservations/${id}`));
  const section = page.locator("#card-payment");
  await expect(section.getByRole("heading", { name: "Payment by card" })).toBeVisible();
  await expect(section.locator(".booking-card-status")).toHaveAttribute("data-status", "succeeded", { timeout: 30_000 });
  await expect(section).toContainText("Paid with Visa ···· 4242.");
  await snapshot(page, "cards-booking-paid");

  // The wallet's receipts: the booking's charge, with Stripe's reference.
  await page.goto("/wallet");
  const receipt = page.locator(`tr[data-status='succeeded']`).filter({ hasText: `Reservation #${id}` });
  await expect(receipt).toContainText("Visa ···· 4242");
  await expect(receipt.locator("code.reference")).toContainText("pi_");
  await expect(page.locator("tr[data-kind='charge']").first()).toContainText(`#${id}`);
  await snapshot(page, "cards-receipts");
});

test("a card whose bank asks for authentication leaves the booking due; its page completes the payment", async ({ page }) => {
  // A second card, one whose bank always asks (3-D Secure, here localstripe's dialog).
  await signIn(page, "the demo user", "/wallet");
  const cards = page.locator("section.cards");
  await expect(cards).toHaveAttribute("data-ready", "true");
  await cards.getByRole("button", { name: "Enter card details" }).click();
  const field = cards.locator(".card-element");
  await field.locator("input[placeholder='number']").fill("4000002760003184");
  await field.locator("input[placeholder='exp_month']").fill("12");
  await field.locator("input[placeholder='exp_year']").fill("30");
  await field.locator("input[placeholder='cvc']").fill("123");
  await field.locator("input[placeholder='postal_code']").fill("01310");
  await cards.getByRole("button", { name: "Save the card" }).click();
  await page.getByRole("button", { name: "Complete authentication" }).click();
  await expect(cards.locator(".saved-card")).toHaveCount(2);

  // Booked with it, paid now: the bank asks, so the booking is due.
  const day = new Date(Date.now() + 10 * 86400000).toISOString().slice(0, 10);
  await page.goto(`/calendar?start=${day}&span=day`);
  await expect(page.locator(".calendar-layout")).toHaveAttribute("data-hydrated", "true");
  const gpuId = (await page.locator(".cal-track").first().getAttribute("data-gpu"))!;
  await drag(page, gpuId, 12 / 24 + 0.001, 13 / 24 - 0.002);
  const panel = page.locator(".calendar-side .panel").first();
  await panel.getByLabel("Pay with").selectOption({ label: "Visa ···· 3184" });
  await panel.getByRole("button", { name: "Book", exact: true }).click();
  await page.waitForURL(/booked=\d+/);
  const id = new URL(page.url()).searchParams.get("booked")!;
  await page.locator(".budget-note").getByRole("link", { name: "Follow its card payment" }).click();
  const section = page.locator("#card-payment");
  await expect(section.locator(".booking-card-status")).toHaveAttribute("data-status", "requires_action");
  await expect(section).toContainText("Your bank asks you to confirm the payment with Visa ···· 3184");
  await expect(section.locator(".notice-warn")).toContainText("Payment due:");
  await snapshot(page, "cards-booking-due");

  // The holder pays: the bank's check, then Stripe's confirmation; the booking is paid.
  await expect(section).toHaveAttribute("data-ready", "true");
  await section.getByLabel("Card").selectOption({ label: "Visa ···· 3184" });
  await section.getByRole("button", { name: /^Pay/ }).click();
  await page.getByRole("button", { name: "Complete authentication" }).click();
  await expect(page.locator("#card-payment .booking-card-status")).toHaveAttribute("data-status", "succeeded", { timeout: 30_000 });
  await expect(page.locator("#card-payment")).toContainText("Paid with Visa ···· 3184.");
  await page.goto("/reservations");
  const row = page.locator("tr").filter({ has: page.locator(`a[href='/reservations/${id}']`) });
  await expect(row).toHaveAttribute("data-payment", "paid");

  // In Portuguese, the booking's page says the same.
  await page.goto(`/reservations/${id}`);
  await page.getByRole("button", { name: "Português (Brasil)" }).click();
  await expect(page.locator("#card-payment")).toContainText("Paga com o Visa ···· 3184.");
  await page.getByRole("button", { name: "English" }).click();
});
