import { type Page } from "@playwright/test";
import { expect, test, signIn, snapshot } from "./helpers";

async function waitForHydration(page: Page) {
  await expect(page.locator("form.model-filter")).toHaveAttribute("data-hydrated", "true");
}

test.describe("GPU inventory", () => {
  test.use({ locale: "en-US" });
  test.beforeEach(async ({ page }) => signIn(page));

  test("lists the demo GPUs grouped by node", async ({ page }) => {
    await page.goto("/");
    await expect(page).toHaveTitle(/GPU inventory · Berth/);
    await expect(page.getByRole("heading", { level: 1, name: "GPU inventory" })).toBeVisible();
    await expect(page.getByRole("note")).toContainText("Demo inventory");
    for (const node of ["demo-hopper-01", "demo-ampere-01", "demo-lovelace-01"]) {
      await expect(page.getByRole("heading", { level: 2, name: node })).toBeVisible();
    }
    const rows = page.locator("tr.gpu-row");
    await expect(rows).toHaveCount(16);
    await expect(page.getByText("16 GPUs shown")).toBeVisible();
    await expect(page.getByRole("row", { name: /NVIDIA H100 80GB HBM3/ }).first()).toContainText("$3.49/h");
    await snapshot(page, "inventory-en");
  });

  test("the model filter narrows the list in place after hydration", async ({ page }) => {
    await page.goto("/");
    await waitForHydration(page);
    // The Apply button is only for browsers without JavaScript.
    await expect(page.getByRole("button", { name: "Apply" })).toBeHidden();

    await page.getByLabel("Model").selectOption("NVIDIA L40S");
    await expect(page.locator("tr.gpu-row")).toHaveCount(2);
    await expect(page.getByText("2 GPUs shown")).toBeVisible();
    await expect(page.getByRole("heading", { level: 2, name: "demo-hopper-01" })).toHaveCount(0);
    await expect(page).toHaveURL(/\?model=NVIDIA(%20|\+)L40S$/);
    await snapshot(page, "inventory-filtered");

    await page.getByLabel("Model").selectOption("");
    await expect(page.locator("tr.gpu-row")).toHaveCount(16);
  });

  test("switching to Portuguese translates the page and is remembered", async ({ page }) => {
    await page.goto("/");
    await waitForHydration(page);
    await page.getByRole("button", { name: "Português (Brasil)" }).click();
    await expect(page.getByRole("heading", { level: 1, name: "Inventário de GPUs" })).toBeVisible();
    await expect(page.locator("html")).toHaveAttribute("lang", "pt-BR");
    await expect(page.getByRole("row", { name: /NVIDIA H100 80GB HBM3/ }).first()).toContainText("$ 3,49/h");

    await page.reload();
    await expect(page.getByRole("heading", { level: 1, name: "Inventário de GPUs" })).toBeVisible();
    await snapshot(page, "inventory-pt-BR");

    await page.getByRole("button", { name: "English" }).click();
    await expect(page.getByRole("heading", { level: 1, name: "GPU inventory" })).toBeVisible();
  });
});

test.describe("Brazilian browser", () => {
  test.use({ locale: "pt-BR" });

  test("gets Portuguese from Accept-Language", async ({ page }) => {
    await page.goto("/");
    await expect(page.getByRole("heading", { level: 1, name: "Entrar no Berth" })).toBeVisible();
    await snapshot(page, "sign-in-pt-BR");
    await page.getByRole("button", { name: "Entrar como usuário de demonstração" }).click();
    await expect(page.getByRole("heading", { level: 1, name: "Inventário de GPUs" })).toBeVisible();
    await expect(page.getByText("16 GPUs exibidas")).toBeVisible();
  });
});

test.describe("without JavaScript", () => {
  test.use({ javaScriptEnabled: false, locale: "en-US" });
  test.beforeEach(async ({ page }) => signIn(page));

  test("the server renders the list and the filter form works", async ({ page }) => {
    await page.goto("/");
    await expect(page.locator("tr.gpu-row")).toHaveCount(16);
    await page.getByLabel("Model").selectOption("NVIDIA RTX A5000");
    await page.getByRole("button", { name: "Apply" }).click();
    await expect(page).toHaveURL(/model=NVIDIA\+RTX\+A5000/);
    await expect(page.locator("tr.gpu-row")).toHaveCount(2);
    await snapshot(page, "inventory-no-js");
  });

  test("the language switch works as a plain form", async ({ page }) => {
    await page.goto("/");
    await page.getByRole("button", { name: "Português (Brasil)" }).click();
    await expect(page.getByRole("heading", { level: 1, name: "Inventário de GPUs" })).toBeVisible();
  });
});
