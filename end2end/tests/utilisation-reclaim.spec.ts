import { expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1280, height: 900 } });

// This spec adds a node with two GPUs (retired again at the end, but still listed): it runs
// after the inventory spec, which counts the demo fleet's GPUs (files run in name order).
const NODE = "gpu-e2e-idle";
const MODEL = "NVIDIA A2 E2E Idle";

test("an idle booking's holder is warned on its page and says she is still using it", async ({ browser, baseURL }) => {
  test.setTimeout(180_000);
  const headers = { Origin: baseURL! };
  const admin = await browser.newPage();
  await signIn(admin, "the demo platform admin", "/admin/nodes");
  // The holder is the demo team admin, so the specs that read the demo user's reservations see
  // nothing of this one.
  const user = await browser.newPage();
  await signIn(user, "the demo team admin", "/reservations");

  // A node with an agent of its own (this test speaks for it), two GPUs accepted into the fleet.
  await expect(admin.locator("section.nodes")).toHaveAttribute("data-hydrated", "true");
  await admin.getByLabel("Node name").fill(NODE);
  await admin.getByRole("button", { name: "Create token" }).click();
  const token = await admin.locator(".node-token .token-secret").innerText();
  const agent = { Authorization: `Bearer ${token}` };
  const uuids = ["GPU-e2e-idle-0", "GPU-e2e-idle-1"];
  const registered = await admin.request.post("/api/v1/agent/register", {
    headers: agent,
    data: {
      hostname: `${NODE}.example`,
      driver_version: "550.54.15",
      source: "nvml",
      interval_seconds: 5,
      gpus: uuids.map((uuid, i) => ({
        uuid, name: MODEL, pci_bus_id: null, memory_total_mib: 16384, device_index: i,
      })),
    },
  });
  expect(registered.status(), await registered.text()).toBe(200);
  const pending = await (await admin.request.get("/api/v1/admin/gpus/pending")).json();
  const ours = pending.filter((g: { uuid: string }) => uuids.includes(g.uuid));
  expect(ours).toHaveLength(2);
  for (const gpu of ours) {
    const accepted = await admin.request.post(`/api/v1/admin/gpus/${gpu.id}/accept`, { headers });
    expect(accepted.status(), await accepted.text()).toBeLessThan(300);
  }

  // For the test, only batch bookings are watched, idle after a minute; warnings only.
  const policy = await admin.request.put("/api/v1/admin/idle-policy", {
    headers,
    data: {
      window_minutes: 15, warnings: [1], action: "warn", exempt_max_gpus: 0, exempt_max_hours: 0,
      exempt_priorities: ["production", "training", "development"],
    },
  });
  expect(policy.status(), await policy.text()).toBe(200);
  try {
    // The holder books both GPUs as a batch job from the current slot, for ten hours.
    const slot = 15 * 60 * 1000;
    const floor = Math.floor(Date.now() / slot) * slot;
    const iso = (ms: number) => new Date(ms).toISOString();
    const booked = await user.request.post("/api/v1/reservations", {
      headers,
      data: { model: MODEL, count: 2, priority: "batch", start: iso(floor), end: iso(floor + 40 * slot) },
    });
    expect(booked.status(), await booked.text()).toBe(201);
    const { id } = await booked.json();

    // The agent reports the GPUs idle: every minute since the start, then every few seconds.
    const report = async (from: number, to: number) => {
      const samples = [];
      for (let at = from; at <= to; at += 60_000) {
        for (const uuid of uuids) samples.push({ uuid, at: iso(at), gpu_util: 0 });
      }
      const sent = await admin.request.post("/api/v1/agent/report", { headers: agent, data: { samples } });
      expect(sent.status(), await sent.text()).toBe(200);
    };
    await report(floor, Date.now() - 1000);
    await user.goto(`/reservations/${id}`);
    const banner = user.locator(".idle-banner");
    await expect(async () => {
      await report(Date.now() - 1000, Date.now() - 1000);
      await user.reload();
      await expect(banner).toBeVisible({ timeout: 2_000 });
    }).toPass({ timeout: 120_000, intervals: [5_000] });
    await expect(banner).toContainText("Its GPUs are sitting idle.");
    await expect(banner).toContainText("They have been below 5 % since");
    await snapshot(user, "reservation-idle-warning");

    await banner.getByRole("button", { name: "I'm still using it" }).click();
    await expect(user.locator(".still-using-note")).toContainText("You said you are still using it at");
    await expect(user.locator(".idle-banner button")).toHaveCount(0);
    // Once per booking.
    const again = await user.request.post(`/api/v1/reservations/${id}/still-using`, { headers });
    expect(again.status()).toBe(409);
    expect((await again.json()).code).toBe("already_snoozed");
    await snapshot(user, "reservation-still-using");

    // The fleet page shows the policy in force and the form to change it, in both languages.
    await admin.goto("/admin/fleet#idle-reclaim");
    const row = admin.locator("tr[data-idle-scope='platform']");
    await expect(row).toContainText("Warn only");
    await expect(row).toContainText("15 min");
    await expect(admin.locator("form.idle-policy-form")).toBeVisible();
    await admin.locator("form.idle-policy-form").scrollIntoViewIfNeeded();
    await snapshot(admin, "fleet-idle-policy");
    await admin.getByRole("button", { name: "Português (Brasil)" }).click();
    await expect(admin.getByRole("heading", { name: "Recuperação de ociosidade" })).toBeVisible();
    await expect(admin.locator("tr[data-idle-scope='platform']")).toContainText("Só avisar");
    await admin.getByRole("button", { name: "English" }).click();
  } finally {
    const reset = await admin.request.put("/api/v1/admin/idle-policy", { headers, data: {} });
    expect(reset.status(), await reset.text()).toBe(200);
    // The test's GPUs leave the fleet again (the specs after this one count the demo GPUs).
    for (const gpu of ours) {
      const retired = await admin.request.post(`/api/v1/admin/gpus/${gpu.id}/retire`, { headers });
      expect(retired.status(), await retired.text()).toBe(200);
    }
  }
});
