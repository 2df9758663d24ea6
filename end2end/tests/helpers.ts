import { test as base, expect, type BrowserContext, type Page } from "@playwright/test";

export { expect };

/** Whether a console message or page error is about the Content Security Policy. */
function aboutCsp(text: string): boolean {
  return /Content[ -]Security[ -]Policy/i.test(text);
}

/**
 * Playwright's `test` with one automatic fixture: any Content Security Policy violation in any
 * page of the test (its own context and any the test opens with `browser.newContext`) fails it.
 * Every spec imports `test` from here, so the whole suite runs under the policy Berth sends.
 */
export const test = base.extend<{ cspGuard: void }>({
  cspGuard: [
    async ({ context, browser }, use) => {
      const violations: string[] = [];
      const watch = async (watched: BrowserContext) => {
        watched.on("console", (message) => {
          if (aboutCsp(message.text())) violations.push(`${message.location().url}: ${message.text()}`);
        });
        watched.on("weberror", (error) => {
          if (aboutCsp(error.error().message)) violations.push(error.error().message);
        });
        // Also what the page itself is told, in case the browser's own message changes.
        await watched.addInitScript(() => {
          document.addEventListener("securitypolicyviolation", (event) => {
            console.error(
              `Content Security Policy violation: ${event.violatedDirective} blocked ${event.blockedURI}`,
            );
          });
        });
      };
      await watch(context);
      const newContext = browser.newContext.bind(browser);
      browser.newContext = async (options) => {
        const opened = await newContext(options);
        await watch(opened);
        return opened;
      };
      try {
        await use();
      } finally {
        browser.newContext = newContext;
      }
      expect(violations, "Content Security Policy violations").toEqual([]);
    },
    { auto: true },
  ],
});

/** Keeps a full-page screenshot of every important screen in test-results/screens/. */
export async function snapshot(page: Page, name: string) {
  await page.screenshot({ path: `test-results/screens/${name}.png`, fullPage: true });
}

/**
 * Opens `path` signed out, follows the redirect to the sign-in page and signs in with the
 * development sign-in as `account`; ends back on `path`.
 */
export async function signIn(
  page: Page,
  account: "the demo user" | "the demo team admin" | "the demo platform admin" = "the demo user",
  path = "/",
) {
  await page.goto(path);
  await expect(page).toHaveURL(/\/signin\?return_to=/);
  await page.getByRole("button", { name: `Sign in as ${account}` }).click();
  await expect(page).not.toHaveURL(/\/signin/);
}

/** Drags on the calendar row of GPU `gpuId` from `fromFraction` to `toFraction` of its width. */
export async function drag(page: Page, gpuId: string, fromFraction: number, toFraction: number) {
  const track = page.locator(`.cal-track[data-gpu="${gpuId}"]`);
  const box = (await track.boundingBox())!;
  const y = box.y + box.height / 2;
  await page.mouse.move(box.x + box.width * fromFraction, y);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * ((fromFraction + toFraction) / 2), y, { steps: 4 });
  await page.mouse.move(box.x + box.width * toFraction, y, { steps: 4 });
  await page.mouse.up();
}
