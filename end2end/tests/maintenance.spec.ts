import { expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1400, height: 900 }, timezoneId: "America/Sao_Paulo" });

/** `YYYY-MM-DDTHH:MM` in the browser's zone, `days` from today at `hour`:00. */
function localInput(days: number, hour: number): string {
  const at = new Date();
  at.setDate(at.getDate() + days);
  at.setHours(hour, 0, 0, 0);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(hour)}:00`;
}

test("a platform admin sets maintenance on a GPU, sees it listed, and removes it", async ({ page }) => {
  await signIn(page, "the demo platform admin", "/admin/maintenance");
  await expect(page.locator("section.maintenance")).toHaveAttribute("data-hydrated", "true");
  await expect(page.getByRole("link", { name: "Maintenance" })).toBeVisible();

  // Five weeks ahead: clear of the demo bookings and of the other tests' bookings.
  await page.getByLabel("GPU or node").selectOption({ index: 1 });
  await page.getByLabel("Start", { exact: true }).fill(localInput(35, 10));
  await page.getByLabel("End", { exact: true }).fill(localInput(35, 12));
  await page.getByLabel("Reason", { exact: true }).fill("Firmware update (Playwright)");
  await page.getByRole("button", { name: "Set maintenance" }).click();
  await expect(page.getByRole("status")).toContainText("Maintenance set:");
  const row = page.locator("tr", { hasText: "Firmware update (Playwright)" });
  await expect(row).toBeVisible();
  await expect(row).toContainText("upcoming");
  await snapshot(page, "maintenance");

  // Nothing can overlap it: a second window on the same GPU is fine, a bad one is explained.
  await page.getByLabel("GPU or node").selectOption({ index: 1 });
  await page.getByLabel("Start", { exact: true }).fill(localInput(36, 12));
  await page.getByLabel("End", { exact: true }).fill(localInput(36, 10));
  await page.getByLabel("Reason", { exact: true }).fill("backwards");
  await page.getByRole("button", { name: "Set maintenance" }).click();
  await expect(page.getByRole("alert")).toContainText("The end must be after the start.");
  // Server-side problems are data, shown in the reader's language. Switching the language
  // reloads the page in it; the same mistake is then explained in Portuguese.
  await page.getByRole("button", { name: "Português (Brasil)" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Manutenção" })).toBeVisible();
  await expect(page.locator("section.maintenance")).toHaveAttribute("data-hydrated", "true");
  await page.getByLabel("GPU ou nó").selectOption({ index: 1 });
  await page.getByLabel("Início", { exact: true }).fill(localInput(36, 12));
  await page.getByLabel("Fim", { exact: true }).fill(localInput(36, 10));
  await page.locator("input[name=reason]").fill("backwards");
  await page.getByRole("button", { name: "Agendar manutenção" }).click();
  await expect(page.getByRole("alert")).toContainText("O fim deve ser depois do início.");
  await page.getByRole("button", { name: "English" }).click();
  await expect(page.locator("section.maintenance")).toHaveAttribute("data-hydrated", "true");

  await row.getByRole("button", { name: /End maintenance window/ }).click();
  await expect(page.getByRole("status")).toContainText("ended");
  await expect(page.locator("tr", { hasText: "Firmware update (Playwright)" })).toHaveCount(0);
});

test("users get no maintenance link and are refused the page", async ({ page }) => {
  await signIn(page, "the demo user", "/admin/maintenance");
  await expect(page.getByText("You are not allowed to do this.")).toBeVisible();
  await expect(page.getByRole("link", { name: "Maintenance" })).toHaveCount(0);
});
