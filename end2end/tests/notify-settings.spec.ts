import { expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1280, height: 900 } });

test("notification settings save and stay saved", async ({ page }) => {
  await signIn(page, "the demo team admin", "/profile");
  const section = page.locator("#notifications");
  await expect(section.getByRole("heading", { name: "Notifications" })).toBeVisible();
  const approvalsByEmail = section.locator("#email-approval_requested");
  const endingInInbox = section.locator("#inbox-ending_soon");
  // The defaults: approvals in the inbox only, a booking's end in the inbox and by e-mail.
  await expect(approvalsByEmail).not.toBeChecked();
  await expect(section.locator("#inbox-approval_requested")).toBeChecked();
  await expect(endingInInbox).toBeChecked();
  await expect(section.locator("#email-ending_soon")).toBeChecked();
  // The demo portal has no SMTP server, and says so.
  await expect(section).toContainText("does not send e-mail yet");

  await approvalsByEmail.check();
  await endingInInbox.uncheck();
  await snapshot(page, "notification-settings");
  await section.getByRole("button", { name: "Save notification settings" }).click();
  await expect(page).toHaveURL(/\/profile\?done=notifications$/);
  await expect(page.locator("#notifications").getByRole("status")).toHaveText("Notification settings saved.");

  await page.goto("/profile");
  await expect(page.locator("#email-approval_requested")).toBeChecked();
  await expect(page.locator("#inbox-ending_soon")).not.toBeChecked();
  await expect(page.locator("#inbox-approval_requested")).toBeChecked();

  // Back to the defaults, so other tests see the account as it was.
  await page.locator("#email-approval_requested").uncheck();
  await page.locator("#inbox-ending_soon").check();
  await page.getByRole("button", { name: "Save notification settings" }).click();
  await expect(page).toHaveURL(/\/profile\?done=notifications$/);
  await expect(page.locator("#email-approval_requested")).not.toBeChecked();
  await expect(page.locator("#inbox-ending_soon")).toBeChecked();
});

test("a calendar feed address is shown once, works, and can be turned off", async ({ page, request }) => {
  await signIn(page, "the demo user", "/profile");
  const section = page.locator("#calendar-feeds");
  await expect(section.getByRole("heading", { name: "Calendar feeds" })).toBeVisible();
  await expect(section.locator(".feed-form")).toHaveAttribute("data-hydrated", "true");
  await section.getByLabel("Bookings of").selectOption({ label: "My bookings" });
  await section.getByRole("button", { name: "Make a new address" }).click();
  const address = section.locator(".feed-address");
  await expect(address).toContainText("/ical/berth_");
  const url = (await address.textContent())!.trim();
  await snapshot(page, "calendar-feed");

  const feed = await request.get(url);
  expect(feed.status()).toBe(200);
  expect(feed.headers()["content-type"]).toBe("text/calendar; charset=utf-8");
  expect(await feed.text()).toContain("BEGIN:VCALENDAR");

  // Listed without the address; turning it off makes the address fail.
  const row = section.locator(".feed-table tbody tr").filter({ hasText: "My bookings" });
  await expect(row).toHaveCount(1);
  await row.getByRole("button", { name: "Turn off" }).click();
  await expect(section.locator(".feed-table tbody tr").filter({ hasText: "My bookings" })).toHaveCount(0);
  expect((await request.get(url)).status()).toBe(404);
});

test("platform admins see what went out, and users may not look", async ({ page }) => {
  await signIn(page, "the demo platform admin", "/admin/deliveries");
  await expect(page.getByRole("heading", { name: "Deliveries", level: 1 })).toBeVisible();
  await expect(page.locator(".site-nav")).toContainText("Deliveries");
  // The demo portal has no SMTP server and no webhooks: it says so, and lists nothing.
  await expect(page.locator(".deliveries")).toContainText("does not send e-mail");
  await expect(page.locator(".delivery-filters")).toContainText("Failed (0)");
  await page.getByRole("link", { name: "Failed (0)" }).click();
  await expect(page).toHaveURL(/\/admin\/deliveries\?status=failed$/);
  await expect(page.locator(".delivery-filters a[aria-current=page]")).toHaveText("Failed (0)");
  await snapshot(page, "deliveries");
});
