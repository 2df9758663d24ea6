import { expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1400, height: 1000 }, timezoneId: "America/Sao_Paulo" });

test("a team admin invites a member, sets the budget, and a team booking over it is refused", async ({ page }) => {
  await signIn(page, "the demo team admin", "/teams");
  await expect(page.getByRole("heading", { level: 1, name: "Teams" })).toBeVisible();
  await page.getByRole("link", { name: "Demo Lab" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Demo Lab" })).toBeVisible();
  // The demo team starts with credits and a budget.
  await expect(page.locator(".team-money")).toContainText("Team wallet");
  expect(Number(await page.locator("[data-team-balance-minor]").getAttribute("data-team-balance-minor"))).toBeGreaterThan(0);

  // Invite by e-mail: the invitation is listed until that person signs in.
  const invite = page.locator("form.team-form").filter({ has: page.locator("input[name='email']") });
  await invite.getByLabel("E-mail").fill("new.colleague@example.com");
  await invite.getByRole("combobox").selectOption("member");
  await invite.getByRole("button", { name: "Invite" }).click();
  await expect(page.getByRole("status")).toContainText("Invitation sent");
  await expect(page.locator("table.team-invitations")).toContainText("new.colleague@example.com");
  // Twice is refused with the reason.
  await invite.getByLabel("E-mail").fill("new.colleague@example.com");
  await invite.getByRole("button", { name: "Invite" }).click();
  await expect(page.getByRole("alert")).toContainText("already invited");

  // A small budget: 5.00 a month, bookings over it refused.
  const budget = page.locator("form.budget-form");
  await budget.locator("input[name='budget']").fill("5.00");
  await budget.locator("select[name='mode']").selectOption("refuse");
  await budget.getByRole("button", { name: "Save budget" }).click();
  await expect(page.getByRole("status")).toContainText("Budget saved");
  await expect(page.locator(".budget-line")).toContainText("$5.00");
  // The dashboard's recent activity shows both changes.
  await expect(page.locator("table.audit-table")).toContainText("Budget changed");
  await expect(page.locator("table.audit-table")).toContainText("Member invited");
  await snapshot(page, "team-dashboard");

  // Booking 3 h of an H100 for the team costs more than 5.00: refused, saying so.
  await page.goto("/calendar");
  await expect(page.locator(".calendar-layout")).toHaveAttribute("data-hydrated", "true");
  const find = page.locator("form.find-form");
  await find.locator("select[name=model]").selectOption("NVIDIA H100 80GB HBM3");
  await find.locator("input[name=hours]").fill("3");
  await find.getByRole("button").click();
  const panel = page.locator(".calendar-side .panel").first();
  await panel.locator("select[name='team_id']").selectOption({ label: "Demo Lab" });
  await page.getByRole("button", { name: "Book this" }).first().click();
  await expect(page.getByRole("alert")).toContainText("over its monthly budget");
  await snapshot(page, "calendar-over-budget");
});

test("the audit log lists admin actions for platform admins, in Portuguese too", async ({ page }) => {
  await signIn(page, "the demo platform admin", "/admin/audit");
  await expect(page.getByRole("heading", { level: 1, name: "Audit log" })).toBeVisible();
  await page.getByRole("button", { name: "Português (Brasil)" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Registro de auditoria" })).toBeVisible();
  // The budget set in the test above, with who set it and the values before and after.
  await page.locator(".audit-filter select").selectOption("team.budget");
  await page.getByRole("button", { name: "Mostrar" }).click();
  await expect(page).toHaveURL(/action=team\.budget/);
  const row = page.locator("tr[data-action='team.budget']").first();
  await expect(row).toContainText("Orçamento alterado");
  await expect(row).toContainText("Demo Team Admin");
  await expect(row).toContainText("equipe");
  await expect(row).toContainText('"limit":500');
  await expect(page.locator("tr[data-action]:not([data-action='team.budget'])")).toHaveCount(0);
  await snapshot(page, "audit-pt-BR");
  await page.getByRole("button", { name: "English" }).click();
});

test("a platform admin sets a team's quota, its team admin approves a member's large booking; the dashboard shows use against quota", async ({ browser }) => {
  const options = { locale: "en-US", viewport: { width: 1400, height: 1000 }, timezoneId: "America/Sao_Paulo" };
  const admin = await (await browser.newContext(options)).newPage();
  await signIn(admin, "the demo team admin", "/teams");
  await admin.getByRole("link", { name: "Demo Lab" }).click();
  await expect(admin.getByRole("heading", { level: 1, name: "Demo Lab" })).toBeVisible();
  const teamUrl = admin.url();
  // No budget in the way (the first test left a small one).
  const budget = admin.locator("form.budget-form");
  await budget.locator("input[name='budget']").fill("");
  await budget.getByRole("button", { name: "Save budget" }).click();
  await expect(admin.getByRole("status")).toContainText("Budget saved");

  // Quotas are the platform admins': the team admin has no form for them.
  await expect(admin.locator("form.quota-form")).toHaveCount(0);
  await expect(admin.locator(".team-quota-note")).toContainText("Quotas are set by platform admins");

  // A platform admin sets one for the H100s: 6 at once, 400 GPU-hours a week.
  const platform = await (await browser.newContext(options)).newPage();
  await signIn(platform, "the demo platform admin", new URL(teamUrl).pathname);
  const quota = platform.locator("form.quota-form");
  await quota.locator("select[name='model']").selectOption("NVIDIA H100 80GB HBM3");
  await quota.getByLabel("Guaranteed GPUs at once").fill("6");
  await quota.getByLabel("GPU-hours a week").fill("400");
  await quota.getByRole("button", { name: "Save quota" }).click();
  await expect(platform.getByRole("status")).toContainText("Quota saved");
  await admin.reload();
  const h100 = admin.locator("table.team-quotas tr[data-model='NVIDIA H100 80GB HBM3']");
  await expect(h100.locator("td").nth(1)).toHaveText("6");
  await expect(h100.locator("td").nth(3)).toContainText("/ 400 h");
  // More than 2 GPU-hours by a member waits for an admin's approval.
  const rules = admin.locator("form.rules-form");
  await rules.getByLabel("Approval needed above GPU-hours").fill("2");
  await rules.getByRole("button", { name: "Save rules" }).click();
  await expect(admin.getByRole("status")).toContainText("Booking rules saved");
  await expect(admin.locator(".team-policy")).toContainText("more than 2 GPU-hours");

  // The demo user (a member) books 3 h of an H100 for the team: it waits.
  const member = await (await browser.newContext(options)).newPage();
  await signIn(member, "the demo user", "/calendar");
  await expect(member.locator(".calendar-layout")).toHaveAttribute("data-hydrated", "true");
  const find = member.locator("form.find-form");
  await find.locator("select[name=model]").selectOption("NVIDIA H100 80GB HBM3");
  await find.locator("input[name=hours]").fill("3");
  await find.getByRole("button").click();
  const panel = member.locator(".calendar-side .panel").first();
  await panel.locator("select[name='team_id']").selectOption({ label: "Demo Lab" });
  await member.getByRole("button", { name: "Book this" }).first().click();
  await expect(member.locator(".notice-ok")).toContainText("Booked");
  await expect(member.locator(".budget-note")).toContainText("waits for a team admin's approval");
  await member.goto("/reservations");
  await expect(member.locator("tr[data-payment='awaiting_approval'] .payment-note")).toContainText(
    "waiting for a team admin's approval",
  );

  // The team admin is told on every page, and approves it from the dashboard.
  await admin.goto(teamUrl);
  await expect(admin.locator(".approvals-banner")).toContainText("1 team booking waits for your approval");
  const pending = admin.locator("table.team-pending tbody tr");
  await expect(pending).toHaveCount(1);
  await expect(pending).toContainText("Demo User");
  await expect(pending).toContainText("3 h");
  await snapshot(admin, "team-quota-approvals");
  await pending.getByRole("button", { name: "Approve" }).click();
  await expect(admin.getByRole("status")).toContainText("Booking approved");
  await expect(admin.locator("table.team-pending")).toHaveCount(0);
  await expect(admin.locator(".approvals-banner")).toHaveCount(0);
  await expect(admin.locator("table.audit-table")).toContainText("Booking approved");
  // Paid now: the member's list says so.
  await member.goto("/reservations");
  await expect(member.locator("tr[data-payment='awaiting_approval']")).toHaveCount(0);
});
