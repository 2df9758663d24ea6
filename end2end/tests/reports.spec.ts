import { readFileSync } from "node:fs";
import { expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1400, height: 1000 }, timezoneId: "America/Sao_Paulo" });

test("a team admin opens last month's team report, reads the chart and downloads the CSV", async ({ page }) => {
  // The calendar tells the server the browser's time zone (America/Sao_Paulo here).
  await signIn(page, "the demo team admin", "/calendar");
  await expect(page.locator(".calendar-toolbar .lede")).toContainText("America/Sao_Paulo");
  await page.getByRole("link", { name: "Reports" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Cost reports" })).toBeVisible();
  const form = page.locator("form.report-form");
  await form.locator("select[name='period']").selectOption("last_month");
  await form.locator("select[name='scope']").selectOption({ label: "Team Demo Lab" });
  await form.getByRole("button", { name: "Show report" }).click();
  await expect(page).toHaveURL(/period=last_month/);
  await expect(page.locator(".report-period")).toContainText("America/Sao_Paulo");

  // The chart is SVG drawn on the server: bars per day, both axes named, a legend.
  const chart = page.locator("figure.report-chart");
  await expect(chart.locator("svg rect.bar").first()).toBeVisible();
  expect(await chart.locator("svg rect.bar").count()).toBeGreaterThan(5);
  await expect(chart.locator("svg")).toContainText("GPU-hours");
  await expect(chart.locator("svg")).toContainText("Utilization (%)");
  await expect(chart.locator(".legend")).toContainText("Demo Lab");
  // The table under it: the team's row and the total.
  const table = page.locator("table.report-table");
  await expect(table.locator("tbody tr")).toHaveCount(1);
  await expect(table.locator("tbody tr th")).toHaveText("Demo Lab");
  const bookings = Number(await table.locator("tfoot td").first().innerText());
  expect(bookings).toBeGreaterThan(0);
  await snapshot(page, "report-team-last-month");

  // The CSV is the same table: RFC 4180 with a header, one line per group and the total.
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("link", { name: "Download CSV" }).click(),
  ]);
  expect(download.suggestedFilename()).toMatch(/^berth-usage-\d{4}-\d{2}-01-\d{4}-\d{2}-\d{2}-by-team\.csv$/);
  const csv = readFileSync(await download.path(), "utf8");
  const lines = csv.trimEnd().split("\r\n");
  expect(lines[0]).toBe(
    "group_by,key,name,period_from,period_to,bookings,reserved_gpu_hours,charged,refunds,net_spend,currency," +
      "avg_utilization_percent,used_gpu_hours,idle_gpu_hours,unmeasured_gpu_hours,cost_per_used_gpu_hour",
  );
  expect(lines).toHaveLength(3);
  expect(lines[1]).toContain(",Demo Lab,");
  expect(lines[2].split(",")[5]).toBe(String(bookings));
});

test("the report reads without JavaScript, and bad dates are explained", async ({ browser }) => {
  const context = await browser.newContext({ javaScriptEnabled: false, locale: "pt-BR", timezoneId: "America/Sao_Paulo" });
  const page = await context.newPage();
  await page.goto("/reports");
  await page.locator("button[name='role'][value='platform_admin']").click();
  await page.goto("/reports?period=last_month&group_by=model&scope=all");
  await expect(page.getByRole("heading", { level: 1, name: "Relatórios de custos" })).toBeVisible();
  await expect(page.locator("figure.report-chart svg rect.bar").first()).toBeVisible();
  await expect(page.locator("table.report-table thead")).toContainText("Modelo de GPU");
  // The fleet view: capacity, reserved and used per day.
  await page.getByRole("link", { name: /Uso da frota/ }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Uso da frota" })).toBeVisible();
  await expect(page.locator("figure.report-chart .legend")).toContainText("Reservadas sem uso");
  await snapshot(page, "report-fleet-pt-BR");
  // A range that ends before it starts: the form stays, with the reason.
  await page.goto("/reports?period=custom&from=2026-11-30&to=2026-11-01");
  await expect(page.getByRole("alert")).toBeVisible();
  await expect(page.locator("form.report-form")).toBeVisible();
  await context.close();
});
