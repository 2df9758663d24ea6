import { expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1280, height: 900 } });

const KEY =
  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAII+h3y9a5OgeFAY+0Rs+KWeJwUN0nR83tzfdPgmSUKmF laptop@e2e";
const FINGERPRINT = "SHA256:QfKVjwUUOxa15Pyr7zWbilHsSs297YpG5oi/vrZmFms";

test("SSH keys are added, refused when broken, and removed on the profile", async ({ page }) => {
  await signIn(page, "the demo user", "/profile");
  const section = page.locator("#ssh-keys");
  await expect(section.getByRole("heading", { name: "Access to the nodes" })).toBeVisible();
  await expect(section.locator(".ssh-key-form")).toHaveAttribute("data-hydrated", "true");
  // The login Berth uses on every node, from the address.
  await expect(section.locator(".node-login")).toHaveText(/^[a-z_][a-z0-9_-]*$/);

  await section.getByLabel("Public key").fill("ssh-ed25519 not-a-key");
  await section.getByRole("button", { name: "Add key" }).click();
  await expect(section.locator(".error-panel, [role=alert]").first()).toContainText("not an SSH public key");

  await section.getByLabel("Public key").fill(KEY);
  await section.getByRole("button", { name: "Add key" }).click();
  const row = section.locator(".feed-table tbody tr").filter({ hasText: FINGERPRINT });
  await expect(row).toHaveCount(1);
  await expect(row).toContainText("laptop@e2e");
  await expect(row).toContainText("ssh-ed25519");
  await snapshot(page, "ssh-keys");

  await row.getByRole("button", { name: "Remove key laptop@e2e" }).click();
  await expect(row).toHaveCount(0);
});

test("a reservation's page tells its state and how to connect", async ({ page }) => {
  await signIn(page, "the demo user", "/reservations");
  const link = page.locator("table.reservation-table tbody tr td a").first();
  await expect(link).toBeVisible();
  await link.click();
  await expect(page).toHaveURL(/\/reservations\/\d+$/);
  await expect(page.getByRole("heading", { level: 1 })).toContainText("Reservation");
  await expect(page.locator(".lease-state .badge")).toHaveText(/Upcoming|Preparing|Ready|Ending soon|Ended|Cancelled/);
  await expect(page.locator(".connect-line")).toContainText(/^ssh [a-z_][a-z0-9_-]*@/);
  // The demo fleet has no agent that controls access: the page says so.
  await expect(page.locator(".demo-note")).toContainText("demo node");
  await expect(page.getByRole("heading", { name: "GPUs" })).toBeVisible();
  await snapshot(page, "reservation-page");

  await page.goto("/reservations/99999999");
  await expect(page.locator("body")).toContainText(/not found|does not exist/i);
});
