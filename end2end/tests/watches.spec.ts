import { expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1280, height: 900 } });

// This spec adds a node with one GPU of a model of its own (retired again at the end). It runs
// after the inventory spec, which counts the demo fleet's GPUs (files run in name order).
const NODE = "gpu-e2e-watch";
const MODEL = "NVIDIA A2 E2E Watch";

test("a watch made with the form holds a free window that is booked in one click", async ({ browser, baseURL }) => {
  test.setTimeout(120_000);
  const headers = { Origin: baseURL! };
  const admin = await browser.newPage();
  await signIn(admin, "the demo platform admin", "/admin/nodes");
  // The watcher is the demo team admin: the specs that read the demo user's wallet see nothing
  // of this booking.
  const user = await browser.newPage();
  await signIn(user, "the demo team admin", "/watches");

  await expect(admin.locator("section.nodes")).toHaveAttribute("data-hydrated", "true");
  await admin.getByLabel("Node name").fill(NODE);
  await admin.getByRole("button", { name: "Create token" }).click();
  const token = await admin.locator(".node-token .token-secret").innerText();
  const registered = await admin.request.post("/api/v1/agent/register", {
    headers: { Authorization: `Bearer ${token}` },
    data: {
      hostname: `${NODE}.example`, driver_version: "550.54.15", source: "nvml", interval_seconds: 5,
      gpus: [{ uuid: "GPU-e2e-watch-0", name: MODEL, pci_bus_id: null, memory_total_mib: 16384, device_index: 0 }],
    },
  });
  expect(registered.status(), await registered.text()).toBe(200);
  const pending = await (await admin.request.get("/api/v1/admin/gpus/pending")).json();
  const ours = pending.filter((g: { uuid: string }) => g.uuid === "GPU-e2e-watch-0");
  expect(ours).toHaveLength(1);
  const accepted = await admin.request.post(`/api/v1/admin/gpus/${ours[0].id}/accept`, { headers });
  expect(accepted.status(), await accepted.text()).toBeLessThan(300);

  try {
    // The form: the model, 4 hours, from now to a week ahead (the defaults); the GPU is free, so a
    // window is held at once.
    await user.goto("/watches");
    await expect(user.getByRole("heading", { name: "Watches", level: 1 })).toBeVisible();
    const form = user.locator("form.watch-form");
    await form.getByLabel("Model").selectOption(MODEL);
    await form.getByLabel("For (hours)").fill("4");
    await snapshot(user, "watches-form");
    await form.getByRole("button", { name: "Watch" }).click();
    await expect(user.locator(".notice-ok")).toContainText("Watching.");
    const row = user.locator("table.watches-table tbody tr").first();
    await expect(row).toContainText(`1 × ${MODEL}`);
    await expect(row).toContainText("Held for you until");
    await expect(row).toContainText(NODE);
    await snapshot(user, "watches-held");

    // The inbox tells of it, with a link back.
    await user.goto("/inbox");
    const notice = user.locator("li.notice[data-kind='watch_offer']").first();
    await expect(notice).toContainText("A window you watch for came free");
    await notice.getByRole("link", { name: "Your watches" }).click();

    // One click books it.
    await user.locator("table.watches-table tbody tr").first().getByRole("button", { name: "Book it" }).click();
    await expect(user.locator(".notice-ok")).toContainText("Booked.");
    const served = user.locator("table.watches-table tbody tr").first();
    await expect(served).toContainText("Booked:");
    const link = served.locator("a[href^='/reservations/']");
    const href = await link.getAttribute("href");
    await snapshot(user, "watches-booked");

    // A bad watch (200 hours inside a week's span) is refused with its reason; a watch can be
    // stopped.
    await form.getByLabel("Model").selectOption(MODEL);
    await form.getByLabel("For (hours)").fill("200");
    await form.getByRole("button", { name: "Watch" }).click();
    await expect(user).toHaveURL(/error=/);
    await expect(user.locator(".error-panel")).toBeVisible();
    const made = await user.request.post("/api/v1/watches", {
      headers,
      data: {
        model: MODEL, hours: 2,
        from: new Date(Date.now() + 86_400_000).toISOString(),
        to: new Date(Date.now() + 2 * 86_400_000).toISOString(),
      },
    });
    expect(made.status(), await made.text()).toBe(201);
    const { id } = await made.json();
    await user.goto("/watches");
    const second = user.locator(`tr[data-watch='${id}']`);
    await second.getByRole("button", { name: "Stop" }).click();
    await expect(user.locator(".notice-ok")).toContainText("Watch stopped.");
    await expect(user.locator(`tr[data-watch='${id}']`)).toContainText("Stopped");

    // In Portuguese.
    await user.getByRole("button", { name: "Português (Brasil)" }).click();
    await expect(user.getByRole("heading", { name: "Alertas de disponibilidade" })).toBeVisible();
    await expect(user.locator(`tr[data-watch='${id}']`)).toContainText("Encerrado");
    await snapshot(user, "watches-pt-BR");
    await user.getByRole("button", { name: "English" }).click();

    // The booking is the watcher's; cancelled again (refunded) before the GPU leaves.
    const cancelled = await user.request.delete(`/api/v1${href}`, { headers });
    expect(cancelled.status(), await cancelled.text()).toBeLessThan(300);
  } finally {
    const retired = await admin.request.post(`/api/v1/admin/gpus/${ours[0].id}/retire`, { headers });
    expect(retired.status(), await retired.text()).toBe(200);
  }
});
