import { expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1400, height: 900 }, timezoneId: "America/Sao_Paulo" });

const NODE = "gpu-e2e-01";

test("a platform admin adds a node, gets its agent command once, and revokes its token", async ({ page }) => {
  await signIn(page, "the demo platform admin", "/");
  await page.getByRole("link", { name: "Nodes", exact: true }).click();
  await expect(page).toHaveURL(/\/admin\/nodes$/);
  await expect(page.locator("section.nodes")).toHaveAttribute("data-hydrated", "true");
  await expect(page.getByRole("heading", { name: "Nodes", level: 1 })).toBeVisible();

  // The demo fleet is simulated by the portal itself, and says so.
  const demo = page.locator("tr", { hasText: "demo-hopper-01" });
  await expect(demo).toBeVisible();
  await expect(demo.locator(".badge-demo")).toBeVisible();
  await expect(demo.locator(".badge-simulated")).toHaveText(/simulated/i);

  // A blank name is explained next to the form (the browser lets spaces through `required`).
  await page.getByLabel("Node name").fill("   ");
  await page.getByRole("button", { name: "Create token" }).click();
  await expect(page.getByRole("alert")).toContainText("A name needs 1 to 128 characters.");

  await page.getByLabel("Node name").fill(NODE);
  await page.getByRole("button", { name: "Create token" }).click();
  const issued = page.locator(".node-token");
  await expect(issued).toContainText(`Token for node “${NODE}”`);
  await expect(issued).toContainText("Copy it now; it is shown only once.");
  await expect(issued.locator(".token-secret")).toHaveText(/^berth_\S+$/);
  const token = await issued.locator(".token-secret").innerText();
  // The command line names a token file, never the token itself (other users can read argv).
  await expect(issued.locator("pre code")).toHaveText(
    /^berth agent --portal https?:\/\/\S+ --token-file \/etc\/berth\/agent-token$/,
  );
  await expect(issued.locator("pre code")).not.toContainText(token);
  await expect(page.getByRole("alert")).toHaveCount(0);

  // The list is refreshed: the new node has no agent yet and one live token (earlier runs revoked theirs).
  const row = page.locator(`tr[data-node="${NODE}"]`);
  await expect(row).toBeVisible();
  await expect(row.locator("[data-source='none']")).toHaveText("No agent");
  await expect(row.locator("[data-col='tokens']")).toHaveText("1");
  await snapshot(page, "nodes");

  await row.getByRole("button", { name: `Revoke the tokens of ${NODE}` }).click();
  await expect(page.getByRole("status").filter({ hasText: "revoked" })).toHaveText("1 token revoked.");
  await expect(page.locator(`tr[data-node="${NODE}"] [data-col='tokens']`)).toHaveText("0");

  // The page in Portuguese.
  await page.getByRole("button", { name: "Português (Brasil)" }).click();
  await expect(page.getByRole("heading", { name: "Nós", level: 1 })).toBeVisible();
  await expect(page.getByRole("columnheader", { name: "Tokens ativos" })).toBeVisible();
  await page.getByRole("button", { name: "English" }).click();
  await expect(page.getByRole("heading", { name: "Nodes", level: 1 })).toBeVisible();
});

test("users get no nodes link and are refused the page", async ({ page }) => {
  await signIn(page, "the demo user", "/admin/nodes");
  await expect(page.getByText("You are not allowed to do this.")).toBeVisible();
  await expect(page.getByRole("link", { name: "Nodes", exact: true })).toHaveCount(0);
  await expect(page.getByLabel("Node name")).toHaveCount(0);
});
