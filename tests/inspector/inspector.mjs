// The inspector in a browser, for tests/inspector.rs: headless Chromium (the
// system's, through playwright-core) against a running `idemchart serve`
// that the test filled. It opens the machines, a machine's diagram and a
// process; steps through its history with the arrow keys and the buttons,
// checking that the highlighted states follow; reads a duplicate's count;
// retries the dead outbox row with the keyboard alone and waits for it to be
// delivered; sends an event and waits for the page to show it without a
// reload; and fails on any console error. Every wait is on a condition of
// the page, none on a clock. Prints one JSON line: {"ok", "checks", "errors"}.
//
// Usage: node inspector.mjs '{"base": "http://…", "machine": "order",
//   "process": "o-1", "screenshots": "target/inspector-screenshots",
//   "ship": {"type": "SHIP", "data": {"shipmentId": "s-1"}}}'

import { chromium } from "playwright-core";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const config = JSON.parse(process.argv[2]);
const checks = [];
const errors = [];
const profile = mkdtempSync(join(tmpdir(), "idemchart-chromium-"));
mkdirSync(config.screenshots, { recursive: true });

function check(condition, what) {
  if (!condition) throw new Error(`failed: ${what}`);
  checks.push(what);
}

// A persistent context is the way to give Chromium a profile of its own
// (`--user-data-dir`, which Playwright passes itself): a fresh one per run.
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
  timeout: 30_000,
});

let outcome;
try {
  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(15_000);
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => errors.push(`page: ${error.message}`));
  page.on("dialog", (dialog) => dialog.accept());
  const shot = (name) => page.screenshot({ path: join(config.screenshots, `${name}.png`) });

  // The machines.
  await page.goto(`${config.base}/ui`);
  const row = page.locator(`#machines tr[data-machine="${config.machine}"]`);
  await row.waitFor();
  check((await row.textContent()).includes("warning"), "the machine list shows the lint summary");
  await shot("machines");

  // A machine's diagram.
  await row.getByRole("link", { name: config.machine }).click();
  await page.locator("#diagram svg [data-state]").first().waitFor();
  const states = await page.locator("#diagram svg g[data-state]").count();
  check(states > 0, `the machine's diagram has ${states} state shapes`);
  check((await page.locator("#findings tbody tr").count()) > 0, "the findings are listed");
  await shot("machine");

  // The process, found by its id.
  await page.goto(`${config.base}/ui/machines/${config.machine}/processes?q=${config.process}`);
  const found = page.getByRole("link", { name: config.process, exact: true });
  await found.waitFor();
  await shot("processes");
  await found.click();
  await page.locator("#history").waitFor();
  await shot("process");

  const entries = await page.locator("#history tr[data-entry]").evaluateAll((rows) =>
    rows.map((r) => JSON.parse(r.dataset.configuration)),
  );
  check(entries.length >= 5, `the history has ${entries.length} entries`);

  // The highlighted leaves must be exactly the configuration after `n`.
  async function expectStep(n) {
    const expected = entries[n - 1];
    await page.waitForFunction(
      ({ n, expected }) => {
        const active = [...document.querySelectorAll("#diagram g.active[data-state]")].map((g) =>
          g.getAttribute("data-state"),
        );
        return (
          document.body.dataset.step === String(n) &&
          expected.every((leaf) => active.includes(leaf)) &&
          active.every((path) => expected.some((leaf) => leaf === path || leaf.startsWith(path + ".")))
        );
      },
      { n, expected },
    );
    check(true, `step ${n}: ${expected.join(", ")} highlighted`);
  }

  // Five entries back with the arrow keys, then forward with the Next link:
  // by the keyboard (focus and Enter) once, then by the mouse.
  const last = entries.length;
  await expectStep(last);
  await page.locator("body").focus();
  for (let n = last - 1; n >= last - 4; n--) {
    await page.keyboard.press("ArrowLeft");
    await expectStep(n);
  }
  await shot("process-stepped");
  await page.locator("#next").focus();
  await page.keyboard.press("Enter");
  await expectStep(last - 3);
  for (let n = last - 2; n <= last; n++) {
    await page.locator("#next").click();
    await expectStep(n);
  }

  // The duplicate, counted on the entry it was answered from.
  const counted = await page.locator("#history td.duplicates").allTextContents();
  check(counted.some((text) => text.startsWith("1 (")), "a duplicate is counted on its entry");

  // The dead row, retried with the keyboard alone: Tab to its button, Enter.
  const dead = page.locator("#outbox tr.status-dead");
  await dead.waitFor();
  const key = await dead.getAttribute("data-key");
  const retry = dead.getByRole("button", { name: "Retry now" });
  let reached = false;
  for (let i = 0; i < 300 && !reached; i++) {
    await page.keyboard.press("Tab");
    reached = await retry.evaluate((button) => document.activeElement === button);
  }
  check(reached, "the retry button is reached with Tab");
  await Promise.all([page.waitForURL(/#outbox$/), page.keyboard.press("Enter")]);
  await page
    .locator(`#outbox tr[data-key="${key}"] td.status`)
    .filter({ hasText: /^done$/ })
    .waitFor();
  check(true, "the retried row is delivered");
  await shot("process-retried");

  // A new event shows without a reload: the page follows the service's events.
  await page.waitForFunction(() => document.body.dataset.live === "yes");
  // A mark on the window, which a reload would clear.
  await page.evaluate(() => { window.notReloaded = true; });
  const sent = await fetch(`${config.base}/machines/${config.machine}/processes/${config.process}/events`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(config.ship),
  });
  check(sent.ok, "the event is applied");
  await page.locator("#configuration").filter({ hasText: config.shipped }).waitFor();
  check(
    await page.evaluate(() => window.notReloaded === true),
    "the page showed the new event without a reload",
  );
  entries.push(
    await page.locator(`#history tr[data-entry="${last + 1}"]`).evaluate((r) => JSON.parse(r.dataset.configuration)),
  );
  await expectStep(last + 1);
  await shot("process-live");
  outcome = { ok: errors.length === 0, checks, errors };
} catch (error) {
  outcome = { ok: false, checks, errors: [...errors, String(error && error.stack ? error.stack : error)] };
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify(outcome));
process.exit(outcome.ok ? 0 : 1);
