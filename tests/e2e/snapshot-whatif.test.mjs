// Browser tests of a PyTorch snapshot's what-ifs (issue 25) on the snapshot
// view (app/src/views/snapshot/what_if.rs), on a real snapshot of the
// corpus dropped on the page: every what-if the analyzer made is drawn with
// the analyzer's number (`oomscope analyze --json`, the code the worker
// runs), and a line picked on the page ("Replay without") is replayed in
// the worker to the number of `oomscope analyze --without LINE --json`.
//
// Environment: CHROMIUM (default /usr/bin/chromium), OOMSCOPE_CORPUS
// (default ../shared/corpus beside the repository).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { corpusDir, dropFiles, openExamplePage } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.join(ROOT, "dist");
// A real notebook's snapshot with more lines at the peak than the three the
// analyzer replays by itself.
const NAME = "HugePandaCoder__octree-nca-groupeq__mem_snapshots__traditional_single_step.pickle";
const SNAPSHOT = path.join(corpusDir(), "snapshots", NAME);
const TIMEOUT = 60_000;

let opened;
let page;

/** `oomscope analyze --json [--without FRAME]` on the snapshot. */
function analyzer(...extra) {
  const args = ["run", "-q", "-p", "oomscope-analyzer", "--", "analyze", "--json", SNAPSHOT, ...extra];
  return JSON.parse(execFileSync("cargo", args, { cwd: ROOT, encoding: "utf8", maxBuffer: 1 << 28 }));
}

/** The page's row of the what-if `remedy` (of `frame`, for a line). */
function row(remedy, frame) {
  const selector = `[data-testid="snapshot-what-if"][data-remedy="${remedy}"]` + (frame ? `[data-frame="${CSS_escape(frame)}"]` : "");
  return page.locator(selector);
}

function CSS_escape(text) {
  return text.replace(/["\\]/g, "\\$&");
}

async function predicted(locator) {
  return Number(await locator.locator('[data-testid="snapshot-what-if-peak"] .bytes').getAttribute("data-bytes", { timeout: TIMEOUT }));
}

before(async () => {
  opened = await openExamplePage(DIST, TIMEOUT);
  page = opened.page;
  await dropFiles(page, [{ name: NAME, path: SNAPSHOT }]);
  await page.locator('[data-testid="snapshot-what-ifs"]').waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
});

after(async () => {
  await opened?.close();
});

test("every what-if of the snapshot is drawn with the analyzer's predicted peak", async () => {
  const report = analyzer();
  const entries = report.memory_snapshots[0].what_if;
  assert.ok(entries.length > 0, "the analyzer makes what-ifs for this snapshot");
  assert.equal(await page.locator('[data-testid="snapshot-what-if"]').count(), entries.length);
  for (const w of entries) {
    const r = row(w.remedy, w.frame);
    assert.equal(await r.count(), 1, `${w.remedy} ${w.frame ?? ""}`);
    assert.equal(await predicted(r), w.predicted_peak_bytes, `${w.remedy} ${w.frame ?? ""}`);
  }
});

test("a line replayed without on the page equals `oomscope analyze --without`", async () => {
  const report = analyzer();
  const snap = report.memory_snapshots[0];
  const replayed = new Set(snap.what_if.map((w) => w.frame).filter(Boolean));
  // A line the report does not replay by itself.
  const line = snap.top_lines_at_peak.find((l) => !replayed.has(l.frame));
  assert.ok(line, `a line beyond the ones replayed: ${JSON.stringify(snap.top_lines_at_peak.map((l) => l.frame))}`);
  const expected = analyzer("--without", line.frame).memory_snapshots[0].what_if.find((w) => w.frame === line.frame);
  assert.ok(expected, `the CLI replays ${line.frame}`);
  assert.equal(await row("without_allocations", line.frame).count(), 0);
  await page
    .locator(`[data-testid="snapshot-lines"] tr[data-frame="${CSS_escape(line.frame)}"] [data-testid="snapshot-without"]`)
    .click({ timeout: TIMEOUT });
  const r = row("without_allocations", line.frame);
  await r.waitFor({ timeout: TIMEOUT });
  assert.equal(await predicted(r), expected.predicted_peak_bytes);
  assert.ok(expected.predicted_peak_bytes <= snap.peak_allocated_bytes);
  assert.equal(await page.locator('[data-testid="snapshot-replay-status"]').textContent(), "");
});
