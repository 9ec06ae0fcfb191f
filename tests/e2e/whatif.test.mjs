// The What-if panel of the module view (issue 25), in the browser, on the
// OOM side of a real same-program pair (fixtures/pair-donate/plain: an SGD
// step that ran out on v5e, its compile log and HloProto).
//
// - Toggling donation shows the predicted peak the analyzer gives for the
//   same files (`oomscope analyze --what-if donation --json`, the code the
//   worker runs); nothing is copied from the screen into the test.
// - The replay runs in the worker: the panel says how long the round trip took.
// - "Copy link" carries the toggles: the link, opened in a fresh browser,
//   shows the panel with donation on and the same prediction.

import { test, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { dropFiles, exampleSuite } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.join(ROOT, "dist");
const OUT = path.join(HERE, "out");
const PAIR = path.join(ROOT, "fixtures/pair-donate/plain");
const TIMEOUT = 60_000;

const opened = exampleSuite(TIMEOUT, { clipboard: true });
let page;
// (After the suite's own `before` has opened the page.)
beforeEach(() => {
  page = opened.page;
});

/** The compile log and the HloProto of the OOM side. */
function inputs() {
  return fs
    .readdirSync(PAIR)
    .filter((n) => n === "compile.log" || n.endsWith(".hlo.pb"))
    .map((name) => ({ name, path: path.join(PAIR, name) }));
}

/** `oomscope analyze --what-if REMEDY --json` on the same files. */
function analyzerWhatIf(remedy) {
  const args = ["run", "-q", "-p", "oomscope-analyzer", "--", "analyze", "--json", "--what-if", remedy, ...inputs().map((f) => f.path)];
  const report = JSON.parse(execFileSync("cargo", args, { cwd: ROOT, encoding: "utf8", maxBuffer: 1 << 28 }));
  const entry = report.diagnosis.what_if.find((w) => w.remedy === remedy && !w.with);
  assert.ok(entry, `the analyzer predicts ${remedy}`);
  return entry;
}

test("toggling donation shows the analyzer's prediction, and a link reopens it", async () => {
  const expected = analyzerWhatIf("donation");
  // The built-in example is a saved report: no program to replay, no panel.
  assert.equal(await page.locator("#modules .what-if").count(), 0);
  await dropFiles(page, inputs());
  await page.locator(".example-banner").waitFor({ state: "detached", timeout: TIMEOUT });
  const panel = page.locator("#modules .what-if");
  const donation = panel.locator('input[type="checkbox"][data-remedy="donation"]');
  await donation.waitFor({ timeout: TIMEOUT });
  // Each applicable remedy says what it alone predicts; offload does not apply here.
  const alone = await panel.locator('.what-if-toggle[data-remedy="donation"] .what-if-single').getAttribute("data-predicted-peak-bytes");
  assert.equal(Number(alone), expected.predicted_peak_bytes);
  assert.equal(await panel.locator('input[data-remedy="offload"]').isDisabled(), true);

  await donation.check();
  const outcome = panel.locator(".what-if-outcome");
  await outcome.waitFor({ timeout: TIMEOUT });
  assert.equal(Number(await outcome.getAttribute("data-predicted-peak-bytes")), expected.predicted_peak_bytes);
  assert.equal(await outcome.getAttribute("data-fits"), String(expected.fits));
  assert.match(await outcome.textContent(), /fits, .* headroom/);
  // The replayed curve is drawn over today's, with the limit line.
  const legend = await panel.locator(".legend-item").allTextContents();
  assert.ok(legend.some((t) => t.startsWith("Today")), legend.join(" | "));
  assert.ok(legend.some((t) => t.startsWith("With donation")), legend.join(" | "));
  assert.ok(legend.some((t) => t.startsWith("HBM limit")), legend.join(" | "));
  const ms = Number(await panel.locator(".what-if-time").getAttribute("data-ms"));
  console.log(`# what-if round trip to the worker: ${ms} ms`);
  await panel.screenshot({ path: path.join(OUT, "what-if-donation.png") });

  // Batch ÷ 4 with donation: replayed together, a smaller peak.
  await panel.locator('input[data-remedy="batch"]').check();
  await panel.locator('input[data-parameter="batch"]').fill("4");
  await panel.locator('input[data-parameter="batch"]').dispatchEvent("change");
  await page.waitForFunction(
    (before) => {
      const o = document.querySelector("#modules .what-if-outcome");
      return o && o.textContent.includes("batch") && Number(o.dataset.predictedPeakBytes) < before;
    },
    expected.predicted_peak_bytes,
    { timeout: TIMEOUT },
  );
  const combined = Number(await outcome.getAttribute("data-predicted-peak-bytes"));
  await panel.locator('input[data-remedy="batch"]').uncheck();
  await page.waitForFunction(
    (want) => Number(document.querySelector("#modules .what-if-outcome")?.dataset.predictedPeakBytes) === want,
    expected.predicted_peak_bytes,
    { timeout: TIMEOUT },
  );

  // The link carries the toggles and the replay.
  await page.locator("#copy-link").dispatchEvent("click");
  await page.locator('.share-status[data-copied="true"]').waitFor({ timeout: TIMEOUT });
  const link = await page.locator("#share-link").inputValue();
  const other = await page.context().browser().newContext({ viewport: { width: 1280, height: 900 } });
  const receiver = await other.newPage();
  await receiver.goto(link, { timeout: TIMEOUT });
  const carried = receiver.locator("#modules .what-if");
  await carried.locator(".what-if-outcome").waitFor({ timeout: TIMEOUT });
  assert.equal(await carried.locator('input[data-remedy="donation"]').isChecked(), true);
  assert.equal(await carried.locator('input[data-remedy="batch"]').isChecked(), false);
  assert.equal(
    Number(await carried.locator(".what-if-outcome").getAttribute("data-predicted-peak-bytes")),
    expected.predicted_peak_bytes,
  );
  await carried.screenshot({ path: path.join(OUT, "what-if-link.png") });
  await other.close();
  assert.ok(combined < expected.predicted_peak_bytes);
  assert.deepEqual(opened.pageErrors, []);
  assert.deepEqual(opened.cspViolations, []);
});
