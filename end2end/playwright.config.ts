import { defineConfig } from "@playwright/test";

// Berth is started by the test command (scripts/test.sh) with a fresh database and its address
// is passed in BERTH_E2E_URL; running `npx playwright test` alone starts one on port 3210.
const port = 3210;
// localstripe (a fake Stripe from PyPI, installed by scripts/test.sh) for the card payments.
export const stripePort = 3211;
const external = process.env.BERTH_E2E_URL;
const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export default defineConfig({
  testDir: "./tests",
  timeout: 60_000,
  expect: { timeout: 15_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [["list"], ["html", { open: "never" }]],
  outputDir: "test-results",
  use: {
    baseURL: external ?? `http://127.0.0.1:${port}`,
    screenshot: "on",
    trace: "retain-on-failure",
    launchOptions: {
      executablePath: chromium,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    },
  },
  projects: [{ name: "chromium", use: { browserName: "chromium" } }],
  webServer: external
    ? undefined
    : [
      {
        command: `.tools/venv/bin/python server/tests/api/fixtures/localstripe_server.py ${stripePort}`,
        cwd: "..",
        url: `http://127.0.0.1:${stripePort}/js.stripe.com/v3/`,
        reuseExistingServer: false,
        timeout: 60_000,
      },
      {
        command: "target/debug/berth serve",
        cwd: "..",
        url: `http://127.0.0.1:${port}/readyz`,
        reuseExistingServer: false,
        timeout: 120_000,
        env: {
          BERTH_BIND: `127.0.0.1:${port}`,
          BERTH_DATA_DIR: "end2end/.data",
          BERTH_LOG: "warn",
          // The tests sign in as the demo accounts (off unless asked for).
          BERTH_DEV_SIGN_IN: "true",
          // Every test signs in from 127.0.0.1; the default limit is for real clients.
          BERTH_SIGN_IN_RATE_PER_MINUTE: "600",
          // The idle reclaim spec waits for the job: run it every few seconds.
          BERTH_IDLE_JOB_SECONDS: "5",
          // Cards through localstripe; the cards spec sends its webhooks to this portal.
          BERTH_PAYMENTS: "stripe",
          BERTH_STRIPE_API_BASE: `http://127.0.0.1:${stripePort}`,
          BERTH_STRIPE_JS_URL: `http://127.0.0.1:${stripePort}/js.stripe.com/v3/`,
          BERTH_STRIPE_SECRET_KEY: "sk_test_berth",
          BERTH_STRIPE_PUBLISHABLE_KEY: "pk_test_berth",
          BERTH_STRIPE_WEBHOOK_SECRET: "whsec_test_berth",
        },
      },
    ],
});
