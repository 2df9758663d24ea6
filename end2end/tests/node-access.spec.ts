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
  // A refusal keeps what was typed, to be corrected.
  await expect(section.getByLabel("Public key")).toHaveValue("ssh-ed25519 not-a-key");

  await section.getByLabel("Public key").fill(KEY);
  await section.getByRole("button", { name: "Add key" }).click();
  const row = section.locator(".feed-table tbody tr").filter({ hasText: FINGERPRINT });
  await expect(row).toHaveCount(1);
  await expect(row).toContainText("laptop@e2e");
  await expect(row).toContainText("ssh-ed25519");
  // Added: the form is empty for the next key.
  await expect(section.getByLabel("Public key")).toHaveValue("");
  await expect(section.getByLabel(/^Name/)).toHaveValue("");
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

test("a booking moved off a GPU taken for maintenance links its two parts", async ({ browser, baseURL }) => {
  const user = await browser.newPage();
  await signIn(user, "the demo user", "/reservations");
  const admin = await browser.newPage();
  await signIn(admin, "the demo platform admin", "/");
  const headers = { Origin: baseURL! };
  // The demo user books one GPU of the largest model from the current slot, for an hour.
  const gpus = await (await user.request.get("/api/v1/gpus")).json();
  const byModel = new Map<string, number>();
  for (const g of gpus) byModel.set(g.model, (byModel.get(g.model) ?? 0) + 1);
  const model = [...byModel.entries()].sort((a, b) => b[1] - a[1])[0][0];
  const slot = 15 * 60 * 1000;
  const floor = Math.floor(Date.now() / slot) * slot;
  const iso = (ms: number) => new Date(ms).toISOString();
  const booked = await user.request.post("/api/v1/reservations", {
    headers,
    data: { model, count: 1, start: iso(floor), end: iso(floor + 4 * slot) },
  });
  expect(booked.status(), await booked.text()).toBe(201);
  const first = await booked.json();
  // A platform admin takes its GPU for maintenance from the next slot, moving what is in the way.
  const maintenance = await admin.request.post("/api/v1/maintenance", {
    headers,
    data: {
      gpu_ids: first.gpu_ids,
      start: iso(floor + slot),
      end: iso(floor + 3 * slot),
      reason: "fan swap (e2e)",
      release_reservations: true,
    },
  });
  expect(maintenance.status(), await maintenance.text()).toBe(201);

  await user.goto(`/reservations/${first.id}`);
  const note = user.locator(".moved-note");
  await expect(note).toContainText("the rest of this booking continues as reservation");
  await snapshot(user, "reservation-moved-from");
  await note.getByRole("link").click();
  await expect(user).toHaveURL(/\/reservations\/\d+$/);
  expect(user.url()).not.toContain(`/reservations/${first.id}`);
  await expect(user.locator(".moved-note")).toContainText("was taken for maintenance");
  await expect(user.locator(".moved-note").getByRole("link")).toHaveText(`#${first.id}`);
  await expect(user.locator(".connect-line")).toContainText(/^ssh /);
  await snapshot(user, "reservation-moved-to");
});
