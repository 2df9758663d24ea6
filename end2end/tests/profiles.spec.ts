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
  await editor.locator("input[name=name]").fill(name);
  await editor.locator("textarea[name=variables]").fill("HF_HOME=/data/hf\nCUDA_VISIBLE_DEVICES=0");
  await editor.locator("input[name=python]").fill("3.11");
  await editor.locator("textarea[name=packages]").fill("numpy==2.1.0\ntorch>=2.5");
  await editor.locator("textarea[name=setup_script]").fill("git clone https://example.org/tools.git ~/tools || true");
  await editor.locator("input[name='dotfiles[0][path]']").fill(".config/tool.toml");
  await editor.locator("textarea[name='dotfiles[0][content]']").fill("answer = 42");
  await editor.getByRole("button", { name: "Save profile" }).click();
  // Refused in place: the reason, and nothing typed is lost.
  await expect(page.locator(".error-panel, [role=alert]").first()).toContainText("CUDA_VISIBLE_DEVICES");
  await expect(editor.locator("textarea[name=packages]")).toHaveValue("numpy==2.1.0\ntorch>=2.5");
  await expect(editor.locator("input[name=name]")).toHaveValue(name);

  await editor.locator("textarea[name=variables]").fill("HF_HOME=/data/hf");
  await editor.getByRole("button", { name: "Save profile" }).click();
  await expect(page).toHaveURL(/\/profiles\/\d+\?done=saved$/);
  await expect(page.getByRole("status")).toContainText("Profile saved");
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(name);
  const versions = page.locator("table.token-table").last().locator("tbody tr");
  await expect(versions).toHaveCount(1);
  await expect(versions.first()).toContainText("Python 3.11, packages: 2");
  await snapshot(page, "profile-editor");

  // An edit makes version 2.
  const again = page.locator(".profile-editor");
  await expect(again).toHaveAttribute("data-hydrated", "true");
  await again.locator("textarea[name=packages]").fill("numpy==2.1.0\ntorch>=2.5\nscipy");
  await again.getByRole("button", { name: "Save profile" }).click();
  await expect(page.locator("table.token-table").last().locator("tbody tr")).toHaveCount(2);

  // The list, and the booking panel's choice.
  await page.goto("/profiles");
  await expect(page.locator(".profile-table")).toContainText(name);
  // The workspace that follows the user: where it is on the nodes, never saved yet, the quota.
  const workspace = page.locator("section.workspace-summary");
  await expect(workspace.getByRole("heading", { name: "Your workspace" })).toBeVisible();
  await expect(workspace).toContainText("~/berth-workspace");
  await expect(workspace).toContainText("Not saved yet");
  await snapshot(page, "profiles");
  await page.goto("/calendar?model=NVIDIA%20H100%2080GB%20HBM3");
  await expect(page.locator("select[name=profile] option", { hasText: name })).toHaveCount(1);
});
