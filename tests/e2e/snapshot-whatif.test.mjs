// Browser tests of a PyTorch snapshot's what-ifs (issue 25) on the snapshot
// view (app/src/views/snapshot/what_if.rs), on a real snapshot of the
// corpus dropped on the page: every what-if the analyzer made is drawn with
// the analyzer's number (`oomscope analyze --json`, the code the worker
// runs), and a line picked on the page ("Replay without") is replayed in
// the worker to the number of `oomscope analyze --without LINE --json`,
// drawn over the curve, and carried by a link to whoever opens it. The
// same snapshot zipped is replayed from the zip; lines the replay cannot
// take out (no stack, no trace) offer no button and say why.
//
// Environment: CHROMIUM (default /usr/bin/chromium), OOMSCOPE_CORPUS
// (default ../shared/corpus beside the repository).

import { test, beforeEach } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { corpusDir, dropFiles, exampleSuite, OUT } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.join(ROOT, "dist");
// A real notebook's snapshot with more lines at the peak than the three the
// analyzer replays by itself.
const NAME = "HugePandaCoder__octree-nca-groupeq__mem_snapshots__traditional_single_step.pickle";
const SNAPSHOT = path.join(corpusDir(), "snapshots", NAME);
const TIMEOUT = 60_000;
const NO_STACK = "<no stack recorded>";
// A real snapshot taken without record_memory_history: no trace, a
// one-point curve, lines from the blocks alive at snapshot time.
const UNTRACED = "volcengine__verl__mem.pickle";

const opened = exampleSuite(TIMEOUT, { clipboard: true });
let page;

/** `oomscope analyze --json FILE [--without FRAME]` (the snapshot by default). */
function analyzerOn(file, ...extra) {
  const args = ["run", "-q", "-p", "oomscope-analyzer", "--", "analyze", "--json", file, ...extra];
  return JSON.parse(execFileSync("cargo", args, { cwd: ROOT, encoding: "utf8", maxBuffer: 1 << 28 }));
}

function analyzer(...extra) {
  return analyzerOn(SNAPSHOT, ...extra);
}

/** A line of the snapshot at its peak that the report does not replay by itself. */
function lineBeyondTheReport(snap) {
  const replayed = new Set(snap.what_if.map((w) => w.frame).filter(Boolean));
  const line = snap.top_lines_at_peak.find((l) => !replayed.has(l.frame) && l.frame !== NO_STACK);
  assert.ok(line, `a line beyond the ones replayed: ${JSON.stringify(snap.top_lines_at_peak.map((l) => l.frame))}`);
  return line;
}

/** Drops `files` on the page and waits for the snapshot `name` to be shown. */
async function drop(files, name) {
  await dropFiles(page, files);
  await page.locator(`[data-testid="memory-snapshot"] h3:has-text("${name}")`).waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
}

async function replayWithout(frame) {
  await page
    .locator(`[data-testid="snapshot-lines"] tr[data-frame="${CSS_escape(frame)}"] [data-testid="snapshot-without"]`)
    .click({ timeout: TIMEOUT });
  const r = row("without_allocations", frame);
  await r.waitFor({ timeout: TIMEOUT });
  return r;
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

// The snapshot is dropped once, before the first test (a root-level
// `before` would run before exampleSuite's page is open).
let dropped;
beforeEach(async () => {
  page = opened.page;
  dropped ??= (async () => {
    await dropFiles(page, [{ name: NAME, path: SNAPSHOT }]);
    await page.locator('[data-testid="snapshot-what-ifs"]').waitFor({ timeout: TIMEOUT });
    await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
  })();
  await dropped;
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

test("a line replayed without on the page equals `oomscope analyze --without`, drawn over the curve", async () => {
  const report = analyzer();
  const snap = report.memory_snapshots[0];
  const line = lineBeyondTheReport(snap);
  const expected = analyzer("--without", line.frame).memory_snapshots[0].what_if.find((w) => w.frame === line.frame);
  assert.ok(expected, `the CLI replays ${line.frame}`);
  assert.equal(await row("without_allocations", line.frame).count(), 0);
  const r = await replayWithout(line.frame);
  assert.equal(await predicted(r), expected.predicted_peak_bytes);
  assert.ok(expected.predicted_peak_bytes <= snap.peak_allocated_bytes);
  assert.equal(await page.locator('[data-testid="snapshot-replay-status"]').textContent(), "");
  // Its curve joins the Active Memory chart, with its peak.
  const drawn = page.locator(`[data-testid="snapshot-curve-replay"][data-frame="${CSS_escape(line.frame)}"]`);
  assert.equal(Number(await drawn.getAttribute("data-peak-bytes", { timeout: TIMEOUT })), expected.predicted_peak_bytes);
  assert.ok(Number(await drawn.getAttribute("data-points")) > 2);
});

test("a link carries the lines replayed without: whoever opens it sees them replayed and drawn", async () => {
  const snap = analyzer().memory_snapshots[0];
  const line = lineBeyondTheReport(snap);
  // The line replayed by the test before; a second one replayed now.
  const second = snap.top_lines_at_peak.find((l) => l.frame !== line.frame && l.frame !== NO_STACK);
  await replayWithout(second.frame);
  const sent = new Map();
  for (const frame of [line.frame, second.frame]) sent.set(frame, await predicted(row("without_allocations", frame)));
  await page.locator("#copy-link").dispatchEvent("click");
  await page.locator('.share-status[data-copied="true"]').waitFor({ timeout: TIMEOUT });
  const link = await page.locator("#share-link").inputValue();
  const other = await page.context().browser().newContext({ viewport: { width: 1280, height: 900 } });
  try {
    const receiver = await other.newPage();
    await receiver.goto(link, { timeout: TIMEOUT });
    await receiver.locator(".shared-banner").waitFor({ timeout: TIMEOUT });
    for (const [frame, bytes] of sent) {
      const carried = receiver.locator(`[data-testid="snapshot-what-if"][data-remedy="without_allocations"][data-frame="${CSS_escape(frame)}"]`);
      assert.equal(await carried.count(), 1, frame);
      assert.equal(Number(await carried.locator('[data-testid="snapshot-what-if-peak"] .bytes').getAttribute("data-bytes")), bytes, frame);
      const drawn = receiver.locator(`[data-testid="snapshot-curve-replay"][data-frame="${CSS_escape(frame)}"]`);
      assert.equal(Number(await drawn.getAttribute("data-peak-bytes")), bytes, frame);
    }
    // Whoever opens it has no trace: no line offers a replay.
    assert.equal(await receiver.locator('[data-testid="snapshot-without"]').count(), 0);
    fs.mkdirSync(OUT, { recursive: true });
    await receiver.locator('[data-testid="memory-snapshot"]').screenshot({ path: path.join(OUT, "snapshot-what-if-link.png") });
  } finally {
    await other.close();
  }
});

test("the no-stack line offers no replay and says why", async () => {
  const snap = analyzer().memory_snapshots[0];
  assert.ok(snap.top_lines_at_peak.some((l) => l.frame === NO_STACK), "this snapshot has allocations without a stack");
  const cell = page.locator(`[data-testid="snapshot-lines"] tr[data-frame="${CSS_escape(NO_STACK)}"]`);
  assert.equal(await cell.locator('[data-testid="snapshot-without"]').count(), 0);
  assert.match(await cell.locator('[data-testid="snapshot-not-replayable"]').textContent(), /no frame recorded/);
  // Every other line offers one.
  assert.equal(
    await page.locator('[data-testid="snapshot-without"]').count(),
    snap.top_lines_at_peak.filter((l) => l.frame !== NO_STACK).length,
  );
});

test("a snapshot without a trace offers no replay, in one line", async () => {
  const file = path.join(corpusDir(), "snapshots", UNTRACED);
  const snap = analyzerOn(file).memory_snapshots[0];
  assert.equal(snap.trace_events, 0);
  assert.ok(snap.top_lines_at_peak.length > 1);
  await drop([{ name: UNTRACED, path: file }], UNTRACED);
  assert.equal(await page.locator('[data-testid="snapshot-lines"] tbody tr').count(), snap.top_lines_at_peak.length);
  assert.equal(await page.locator('[data-testid="snapshot-without"]').count(), 0);
  const why = page.locator('[data-testid="snapshot-not-replayable"]');
  assert.equal(await why.count(), 1);
  assert.match(await why.textContent(), /no allocation trace/);
});

test("a snapshot inside a zip is replayed from the zip", async () => {
  fs.mkdirSync(OUT, { recursive: true });
  const zipped = path.join(OUT, "snapshot-in.zip");
  fs.rmSync(zipped, { force: true });
  // Deflated beside another file, in a folder, as a user zips a run.
  execFileSync("python3", [
    "-c",
    "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n    z.writestr('run/notes.txt', 'a run')\n    z.write(sys.argv[2], 'run/' + sys.argv[3])",
    zipped,
    SNAPSHOT,
    NAME,
  ]);
  const snap = analyzer().memory_snapshots[0];
  const line = lineBeyondTheReport(snap);
  // The CLI expands the zip as the page does.
  const expected = analyzerOn(zipped, "--without", line.frame).memory_snapshots[0].what_if.find((w) => w.frame === line.frame);
  assert.ok(expected, `the CLI replays ${line.frame} in the zip`);
  assert.equal(expected.module, `snapshot-in.zip/run/${NAME}`);
  await drop([{ name: "snapshot-in.zip", path: zipped }], NAME);
  const r = await replayWithout(line.frame);
  assert.equal(await predicted(r), expected.predicted_peak_bytes);
  assert.equal(await page.locator('[data-testid="snapshot-replay-status"]').textContent(), "");
  assert.deepEqual(opened.pageErrors, []);
  assert.deepEqual(opened.cspViolations, []);
});
