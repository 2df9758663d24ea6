import { expect, test, signIn, snapshot } from "./helpers";

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
  await expect(page.locator("tr[data-payment]")).toHaveCount(1);

  // In Portuguese.
  await page.getByRole("button", { name: "Português (Brasil)" }).click();
  await expect(cards.getByRole("heading", { name: "Cartões" })).toBeVisible();
  await expect(page.locator("tr[data-status='succeeded']")).toContainText("Pago, créditos adicionados");
  await expect(cards.getByRole("button", { name: "Pagar e recarregar" })).toBeVisible();
  await snapshot(page, "cards-pt-BR");
  await page.getByRole("button", { name: "English" }).click();
  await expect(cards.getByRole("heading", { name: "Cards" })).toBeVisible();
});
