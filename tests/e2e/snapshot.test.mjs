// Browser tests of the PyTorch memory snapshot view
// (app/src/views/snapshot/) and the shared stack view (app/src/views/stacks.rs),
// on real snapshots of the corpus dropped on the page:
// - Constructor-Sun__code_location__memory_snapshot.pickle: the corpus's
//   snapshot whose trace holds an `oom` event (device 1 of 3);
// - silmont2000__assignment2-systems__mem_snapshot.pickle: an ordinary
//   training-step trace.
// The peak, its trace index and the OOM's numbers are checked against
// `expected.json` (MemoryViz.js run under node by the corpus's builder).
//
// Environment: CHROMIUM (default /usr/bin/chromium), OOMSCOPE_CORPUS
// (default ../shared/corpus beside the repository).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { corpusDir, dropFiles, openExamplePage } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.join(ROOT, "dist");
const OUT = path.join(HERE, "out");
const CORPUS = corpusDir();
const SNAPSHOTS = path.join(CORPUS, "snapshots");
const TIMEOUT = 60_000;

let opened;
let page;

const expected = () => JSON.parse(fs.readFileSync(path.join(SNAPSHOTS, "expected.json"), "utf8"));

/** Drops `name` from the corpus on the page as a user would (drag and drop); returns the view of `device`. */
async function dropSnapshot(name, device) {
  await dropFiles(page, [{ name, path: path.join(SNAPSHOTS, name) }]);
  const view = page.locator('[data-testid="memory-snapshot"]', { hasText: `${name} · cuda:${device}` }).first();
  await view.waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
  return view;
}

async function bytesOf(locator) {
  return Number(await locator.getAttribute("data-bytes", { timeout: TIMEOUT }));
}

before(async () => {
  fs.mkdirSync(OUT, { recursive: true });
  opened = await openExamplePage(DIST, TIMEOUT);
  page = opened.page;
});

after(async () => {
  await opened?.close();
});

test("a dropped snapshot with an OOM shows MemoryViz's peak, the OOM, the curve and the stacks", async () => {
  const name = "Constructor-Sun__code_location__memory_snapshot.pickle";
  // The device whose trace holds the OOM.
  const [device, dev] = Object.entries(expected()[name].memoryviz.devices).find(([, d]) => d.oom?.length);
  const oom = dev.oom[0];
  const view = await dropSnapshot(name, device);

  assert.equal(await bytesOf(view.locator('[data-testid="snapshot-peak"] .bytes')), dev.active_memory_timeline.peak_bytes);
  const verdict = await view.locator('[data-testid="snapshot-verdict"]').textContent();
  const peakIndex = dev.active_memory_timeline.peak.event.raw_idx;
  assert.ok(verdict.includes(`trace event ${peakIndex.toLocaleString("en-US")}`), `peak index ${peakIndex} in: ${verdict}`);
  const oomLine = view.locator('[data-testid="snapshot-oom"]');
  assert.ok((await oomLine.textContent()).includes(`trace event ${oom.raw_idx.toLocaleString("en-US")}`));
  const oomBytes = await oomLine.locator(".bytes").evaluateAll((b) => b.map((e) => Number(e.dataset.bytes)));
  assert.equal(oomBytes[0], oom.size, "requested");
  assert.equal(oomBytes[1], oom.device_free, "free on the device");

  // The curve: an allocated area reaching the top of its scale at the peak, a reserved line, the OOM marker.
  const curve = view.locator('[data-testid="snapshot-curve"]');
  const area = await curve.locator('polygon[data-series="Allocated"]').getAttribute("points");
  assert.ok(area.trim().split(/\s+/).length > 50, `allocated area: ${area.slice(0, 80)}`);
  assert.equal(await curve.locator('polyline[stroke="#9A6700"]').count(), 1, "the reserved line");
  assert.equal(await curve.locator("svg text", { hasText: /^\s*out of memory at event/ }).count(), 1);
  await curve.locator(".chart-svg").hover();
  assert.match(await curve.locator(".curve-readout").textContent(), /^Event [\d,]+: Allocated: .+; Reserved: .+$/);

  // The stack view: the root box holds every live byte of the stacks at the peak; frames are drawn.
  const stacks = view.locator('[data-testid="stack-view"]');
  const boxes = stacks.locator("g.stack-box");
  assert.ok((await boxes.count()) > 2, "frames drawn");
  const root = stacks.locator('g.stack-box[data-depth="0"]');
  assert.ok((await bytesOf(root)) > 0 && (await bytesOf(root)) <= dev.active_memory_timeline.peak_bytes);
  // Unfolding framework frames makes the icicle deeper; a click lists the allocations under a box.
  const depth = async () => Math.max(...(await boxes.evaluateAll((g) => g.map((e) => Number(e.dataset.depth)))));
  const folded = await depth();
  await stacks.locator('input[type="checkbox"]').check();
  assert.ok((await depth()) > folded, "unfolding shows the framework frames");
  await root.click();
  assert.ok((await stacks.locator('[data-testid="stack-allocations"] tbody tr').count()) > 0);

  await view.screenshot({ path: path.join(OUT, "snapshot-oom.png") });
  assert.deepEqual(opened.pageErrors, []);
  assert.deepEqual(opened.cspViolations, []);
});

test("an ordinary training-step snapshot shows its peak, its state and its top lines", async () => {
  const name = "silmont2000__assignment2-systems__mem_snapshot.pickle";
  const dev = expected()[name].memoryviz.devices["0"];
  const view = await dropSnapshot(name, "0");
  assert.equal(await bytesOf(view.locator('[data-testid="snapshot-peak"] .bytes')), dev.active_memory_timeline.peak_bytes);
  assert.equal(await view.locator('[data-testid="snapshot-oom"]').count(), 0);
  assert.ok((await view.locator('[data-testid="snapshot-curve"] polygon[data-series="Allocated"]').getAttribute("points")).length > 100);
  assert.ok((await view.locator('[data-testid="snapshot-state"] tbody tr').count()) >= 5);
  assert.ok((await view.locator('[data-testid="stack-view"] g.stack-box').count()) > 2);
  await view.screenshot({ path: path.join(OUT, "snapshot-step.png") });
  assert.deepEqual(opened.pageErrors, []);
  assert.deepEqual(opened.cspViolations, []);
});
