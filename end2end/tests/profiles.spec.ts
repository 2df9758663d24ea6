import { expect, test, signIn, snapshot } from "./helpers";

test.use({ locale: "en-US", viewport: { width: 1280, height: 900 } });

test("an environment profile is made, refused in place when wrong, versioned, and offered when booking", async ({ page }) => {
  await signIn(page, "the demo user", "/profile");
  await page.getByRole("link", { name: "Manage your profiles" }).click();
  await expect(page).toHaveURL(/\/profiles$/);
  await expect(page.getByRole("heading", { level: 1, name: "Environment profiles" })).toBeVisible();
  const editor = page.locator(".profile-editor");
  await expect(editor).toHaveAttribute("data-hydrated", "true");

  const name = `torch-${Date.now()}`;
  await editor.getByLabel("Name").fill(name);
  await editor.getByLabel("Environment variables").fill("HF_HOME=/data/hf\nCUDA_VISIBLE_DEVICES=0");
  await editor.getByLabel("Python version (empty: the node's python3)").fill("3.11");
  await editor.getByLabel("Packages").fill("numpy==2.1.0\ntorch>=2.5");
  await editor.getByLabel("Setup script").fill("git clone https://example.org/tools.git ~/tools || true");
  await editor.getByLabel("Path in the home directory").first().fill(".config/tool.toml");
  await editor.getByLabel("Content").first().fill("answer = 42");
  await editor.getByRole("button", { name: "Save profile" }).click();
  // Refused in place: the reason, and nothing typed is lost.
  await expect(page.locator(".error-panel, [role=alert]").first()).toContainText("CUDA_VISIBLE_DEVICES");
  await expect(editor.getByLabel("Packages")).toHaveValue("numpy==2.1.0\ntorch>=2.5");
  await expect(editor.getByLabel("Name")).toHaveValue(name);

  await editor.getByLabel("Environment variables").fill("HF_HOME=/data/hf");
  await editor.getByRole("button", { name: "Save profile" }).click();
  await expect(page).toHaveURL(/\/profiles\/\d+\?done=saved$/);
  await expect(page.getByRole("status")).toContainText("Profile saved");
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(name);
  const versions = page.locator("table.token-table").last().locator("tbody tr");
  await expect(versions).toHaveCount(1);
  await expect(versions.first()).toContainText("Python 3.11, 2 packages");
  await snapshot(page, "profile-editor");

  // An edit makes version 2.
  const again = page.locator(".profile-editor");
  await expect(again).toHaveAttribute("data-hydrated", "true");
  await again.getByLabel("Packages").fill("numpy==2.1.0\ntorch>=2.5\nscipy");
  await again.getByRole("button", { name: "Save profile" }).click();
  await expect(page.locator("table.token-table").last().locator("tbody tr")).toHaveCount(2);

  // The list, and the booking panel's choice.
  await page.goto("/profiles");
  await expect(page.locator(".profile-table")).toContainText(name);
  await snapshot(page, "profiles");
  await page.goto("/calendar?model=NVIDIA%20H100%2080GB%20HBM3");
  await expect(page.locator("select[name=profile] option", { hasText: name })).toHaveCount(1);
});
