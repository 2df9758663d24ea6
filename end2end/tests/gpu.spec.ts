import { type Locator, type Page } from "@playwright/test";
import { expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1440, height: 900 }, timezoneId: "America/Sao_Paulo" });

async function waitForHydration(page: Page) {
  await expect(page.locator("form.model-filter")).toHaveAttribute("data-hydrated", "true");
}

/** The text of every live cell of the list, to compare before and after a poll. */
async function liveValues(page: Page): Promise<string> {
  return (await page.locator("tr.gpu-row td.live").allInnerTexts()).join("|");
}

function nodeCard(page: Page, name: string): Locator {
  return page.locator("article.node-card", {
    has: page.getByRole("heading", { level: 2, name }),
  });
}

test.describe("live GPU telemetry", () => {
  test.beforeEach(async ({ page }) => signIn(page));

  test("the GPU list marks the demo values as simulated and refreshes them", async ({ page }) => {
    await page.goto("/");
    await waitForHydration(page);

    // The demo fleet's values come from the simulated agent, and every node says so.
    for (const node of ["demo-hopper-01", "demo-ampere-01", "demo-lovelace-01"]) {
      await expect(nodeCard(page, node).locator(".badge-simulated")).toHaveText(/simulated/i);
    }

    const row = page.getByRole("row", { name: /NVIDIA H100 80GB HBM3/ }).first();
    await expect(row.locator("td.live-util")).toContainText(/^\d{1,3}%$/);
    await expect(row.locator("td.live-temperature")).toContainText(/^-?\d+ °C$/);
    await expect(row.locator("td.live-power")).toContainText(/^[\d,]+ W$/);
    await expect(row).toContainText(/[\d.]+ GiB used/);
    await expect(row.locator(".util-fill")).toHaveAttribute("style", /width: \d+%/);
    await snapshot(page, "gpu-list-live");

    // The list polls every five seconds: a poll arrives, values stay, and (simulated values
    // vary) some of them change without a reload.
    const before = await liveValues(page);
    const poll = await page.waitForResponse((r) => r.url().includes("get_live_fleet") && r.ok(), {
      timeout: 15_000,
    });
    expect(poll.ok()).toBeTruthy();
    await expect(row.locator("td.live-util")).toContainText(/^\d{1,3}%$/);
    await expect.poll(() => liveValues(page), { timeout: 30_000 }).not.toBe(before);
  });

  test("a GPU's page shows its current values, charts and tables", async ({ page }) => {
    await page.goto("/");
    await waitForHydration(page);
    const row = page.getByRole("row", { name: /NVIDIA H100 80GB HBM3/ }).first();
    await row.getByRole("link", { name: "NVIDIA H100 80GB HBM3" }).click();
    await expect(page).toHaveURL(/\/gpus\/\d+$/);

    await expect(page.getByRole("heading", { level: 1, name: "NVIDIA H100 80GB HBM3" })).toBeVisible();
    await expect(page.locator(".gpu-head .badge-simulated")).toHaveText(/simulated/i);
    await expect(page.locator(".gpu-facts")).toContainText("demo-hopper-01");
    await expect(page.locator(".gpu-facts")).toContainText(/GPU-/);

    await expect(page.getByRole("heading", { level: 2, name: "Current values" })).toBeVisible();
    await expect(page.locator('.stat-card[data-metric="gpu_util"] .stat-value')).toHaveText(/^\d{1,3}%$/);
    await expect(page.locator('.stat-card[data-metric="memory_used"] .stat-value')).toContainText(/GiB/);
    await expect(page.locator('.stat-card[data-metric="temperature"] .stat-value')).toContainText("°C");
    await expect(page.locator('.stat-card[data-metric="power"] .stat-value')).toContainText("W");

    // The last hour's utilisation chart draws a line (the page refreshes every ten seconds, so
    // a chart that was empty at first fills in).
    await expect(page.getByRole("heading", { level: 2, name: "Last hour" })).toBeVisible();
    await expect(page.getByRole("heading", { level: 2, name: "Last 24 hours" })).toBeVisible();
    const line = page.locator(
      'section[aria-labelledby="history-hour"] figure.chart[data-metric="gpu_util"] svg path.chart-line',
    );
    await expect(line).toHaveAttribute("d", /^M[\d.]+ [\d.]+/, { timeout: 30_000 });
    await expect(page.locator("figure.chart svg").first()).toHaveAttribute("role", "img");
    await expect(page.locator("figure.chart .chart-tick").first()).toBeVisible();

    await expect(page.getByRole("heading", { level: 2, name: "Running processes" })).toBeVisible();
    await expect(page.getByRole("heading", { level: 2, name: "Recent events" })).toBeVisible();
    // Times are shown in the browser's zone once it has reported it.
    await expect(page.getByText("Times in America/Sao_Paulo.")).toBeVisible();
    await snapshot(page, "gpu-page");

    // Every ten seconds the server sends the board again (as HTML) and it replaces the old one:
    // the simulated values move without a reload.
    const cards = () => page.locator(".stat-card .stat-value").allInnerTexts().then((t) => t.join("|"));
    const before = await cards();
    const refresh = await page.waitForResponse((r) => r.url().includes("get_gpu_board") && r.ok(), {
      timeout: 15_000,
    });
    expect(refresh.ok()).toBeTruthy();
    await expect(page.locator('.stat-card[data-metric="gpu_util"] .stat-value')).toHaveText(/^\d{1,3}%$/);
    await expect.poll(cards, { timeout: 30_000 }).not.toBe(before);
    await expect(page.getByText("Times in America/Sao_Paulo.")).toBeVisible();

    await page.getByRole("button", { name: "Português (Brasil)" }).click();
    await expect(page.getByRole("heading", { level: 2, name: "Valores atuais" })).toBeVisible();
    await expect(page.locator(".gpu-head .badge-simulated")).toHaveText(/simulado/i);
    await snapshot(page, "gpu-page-pt-BR");
  });

  test("an unknown GPU shows the error panel", async ({ page }) => {
    await page.goto("/gpus/987654321");
    await expect(page.getByRole("alert")).toContainText("Not found.");
  });
});
