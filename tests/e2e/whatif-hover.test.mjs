// Hover over a what-if (issue 25) reads every curve drawn, not today's alone,
// on real inputs dropped on the page, against the numbers of the analyzer
// (`oomscope analyze --json`, the code the worker runs); nothing read off the
// screen is used as the expected answer.
//
// - A PyTorch snapshot (corpus): the lines the analyzer replayed by itself
//   carry their curve in the report (`what_if_curves`); "Draw curve" draws
//   one over the Active Memory curve, and a hover reads today's allocated
//   and reserved bytes and the replayed line's bytes at the event under the
//   pointer, each equal to the report's curves read there (a step curve
//   holds its last point at or before the event).
// - The module view's What-if panel (fixtures/pair-donate/plain): with
//   donation picked, a hover (and the arrow keys) read today's heap and the
//   replayed heap at a program position; today's equals the report's heap
//   curve, the replayed one reaches the analyzer's predicted peak.
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
const TIMEOUT = 60_000;
// A real notebook's snapshot: the analyzer replays three of its lines.
const NAME = "HugePandaCoder__octree-nca-groupeq__mem_snapshots__traditional_single_step.pickle";
const SNAPSHOT = path.join(corpusDir(), "snapshots", NAME);
const PAIR = path.join(ROOT, "fixtures/pair-donate/plain");

const opened = exampleSuite(TIMEOUT);
let page;
beforeEach(() => {
  page = opened.page;
});

function analyzer(...args) {
  const cargo = ["run", "-q", "-p", "oomscope-analyzer", "--", "analyze", "--json", ...args];
  return JSON.parse(execFileSync("cargo", cargo, { cwd: ROOT, encoding: "utf8", maxBuffer: 1 << 28 }));
}

/**
 * A step curve `[x, y]` read at `x`: its last point at or before `x`; at an
 * x several points share (heap-simulator events of one program position),
 * the highest of them.
 */
function stepAt(points, x) {
  let found;
  let at;
  for (const [px, py] of points) {
    if (px > x) break;
    found = px === at && px === x ? Math.max(found, py) : py;
    at = px;
  }
  return found;
}

/** The readings shown: series name → bytes. */
async function readings(scope) {
  const out = new Map();
  for (const r of await scope.locator('[data-testid="chart-reading"]').all()) {
    out.set(await r.getAttribute("data-series"), Number(await r.getAttribute("data-bytes")));
  }
  return out;
}

/** Moves the pointer over `chart` (tagged with its plot's frame) to the pixel of data x `x`. */
async function hoverAt(chart, x, svgWidth) {
  const [x0, x1] = [Number(await chart.getAttribute("data-x0")), Number(await chart.getAttribute("data-x1"))];
  const [left, , width] = (await chart.getAttribute("data-plot")).split(",").map(Number);
  await chart.scrollIntoViewIfNeeded();
  const box = await chart.boundingBox();
  // An inline SVG is scaled to its box; a canvas is drawn in CSS pixels.
  const scale = svgWidth ? box.width / svgWidth : 1;
  const px = (left + ((x - x0) / (x1 - x0)) * width) * scale;
  await page.mouse.move(box.x + px, box.y + box.height / 2);
}

test("hovering the snapshot's curve reads today's bytes and each line the analyzer replayed", async () => {
  const snap = analyzer(SNAPSHOT).memory_snapshots[0];
  assert.ok(snap.what_if_curves.length > 0, "the analyzer replays lines of this snapshot, with their curves");
  await dropFiles(page, [{ name: NAME, path: SNAPSHOT }]);
  await page.locator('[data-testid="snapshot-what-ifs"]').waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
  const device = page.locator('[data-testid="memory-snapshot"]').first();
  // None is drawn at first; each row of a replayed line offers its curve.
  assert.equal(await device.locator('[data-testid="snapshot-curve-replay"]').count(), 0);
  assert.equal(await device.locator('[data-testid="snapshot-what-if-draw"]').count(), snap.what_if_curves.length);

  const picked = snap.what_if_curves.slice(0, 2);
  for (const c of picked) {
    const row = device.locator(`[data-testid="snapshot-what-if"][data-remedy="without_allocations"][data-frame="${c.what_if.frame.replace(/["\\]/g, "\\$&")}"]`);
    await row.locator('[data-testid="snapshot-what-if-draw"]').click();
    await row.locator('[data-testid="snapshot-what-if-draw"][aria-pressed="true"]').waitFor({ timeout: TIMEOUT });
  }
  const drawn = device.locator('[data-testid="snapshot-curve-replay"]');
  assert.equal(await drawn.count(), picked.length);
  for (const [i, c] of picked.entries()) {
    assert.equal(await drawn.nth(i).getAttribute("data-frame"), c.what_if.frame);
    assert.equal(Number(await drawn.nth(i).getAttribute("data-peak-bytes")), c.what_if.predicted_peak_bytes);
  }

  const allocated = snap.active_memory_curve.map((p) => [p.event_index, p.allocated_bytes]);
  const reserved = snap.active_memory_curve.map((p) => [p.event_index, p.reserved_bytes]);
  const chart = device.locator('[data-testid="snapshot-curve"] .chart-svg');
  const readout = device.locator('[data-testid="snapshot-curve"] [data-testid="chart-readout"]');
  const last = snap.active_memory_curve.at(-1).event_index;
  // Events across the trace, and each replay's own peak.
  const events = [0.1, 0.3, 0.5, 0.7, 0.9].map((f) => Math.round(f * last));
  for (const c of picked) events.push(c.positions[c.heap_bytes.indexOf(c.what_if.predicted_peak_bytes)]);
  let differ = 0;
  for (const target of events) {
    await hoverAt(chart, target, 960);
    await page.waitForFunction((el) => el.dataset.x !== undefined, await readout.elementHandle(), { timeout: TIMEOUT });
    const event = Number(await readout.getAttribute("data-x"));
    assert.ok(Math.abs(event - target) <= last / 200 + 1, `hovered ${event} for ${target}`);
    const got = await readings(readout);
    assert.equal(got.get("Allocated"), stepAt(allocated, event), `allocated at ${event}`);
    assert.equal(got.get("Reserved"), stepAt(reserved, event), `reserved at ${event}`);
    for (const c of picked) {
      const points = c.positions.map((p, i) => [p, c.heap_bytes[i]]);
      const want = stepAt(points, event);
      assert.equal(got.get(`without ${c.what_if.frame}`), want, `${c.what_if.frame} at ${event}`);
      if (want !== got.get("Allocated")) differ += 1;
    }
    assert.equal(got.size, 2 + picked.length, [...got.keys()].join(" | "));
  }
  // The replays are not today's curve read twice.
  assert.ok(differ > 0, "a replayed line differs from today's somewhere hovered");
  fs.mkdirSync(OUT, { recursive: true });
  await device.locator('[data-testid="snapshot-curve"]').screenshot({ path: path.join(OUT, "snapshot-what-if-hover.png") });

  // Hiding a curve takes it out of the chart and out of the hover.
  const first = picked[0];
  await device.locator(`[data-testid="snapshot-what-if"][data-frame="${first.what_if.frame.replace(/["\\]/g, "\\$&")}"] [data-testid="snapshot-what-if-draw"]`).click();
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="snapshot-curve-replay"]').length === n, picked.length - 1, { timeout: TIMEOUT });
  await hoverAt(chart, events[0], 960);
  await hoverAt(chart, events[1], 960);
  assert.equal((await readings(readout)).has(`without ${first.what_if.frame}`), false);
  assert.deepEqual(opened.pageErrors, []);
});

test("hovering the What-if panel's chart reads today's heap and the replayed heap, with the keyboard too", async () => {
  const files = fs
    .readdirSync(PAIR)
    .filter((n) => n === "compile.log" || n.endsWith(".hlo.pb"))
    .map((name) => ({ name, path: path.join(PAIR, name) }));
  const report = analyzer("--what-if", "donation", ...files.map((f) => f.path));
  const expected = report.diagnosis.what_if.find((w) => w.remedy === "donation" && !w.with);
  const module = report.modules.find((m) => m.peak_bytes === Math.max(...report.modules.map((m) => m.peak_bytes)));
  const today = module.heap_bytes.map((b, i) => [module.heap_positions?.[i] ?? i, b]);

  await dropFiles(page, files);
  const panel = page.locator("#modules .what-if");
  await panel.locator('input[type="checkbox"][data-remedy="donation"]').check({ timeout: TIMEOUT });
  await panel.locator(".what-if-outcome").waitFor({ timeout: TIMEOUT });
  const canvas = panel.locator("canvas");
  await page.waitForFunction((el) => el.dataset.plot !== undefined, await canvas.elementHandle(), { timeout: TIMEOUT });
  const readout = panel.locator('[data-testid="chart-readout"]');
  const names = (got) => [...got.keys()];
  const check = async (x) => {
    const got = await readings(readout);
    const [now, replayed] = names(got);
    assert.match(now, /^Today/);
    assert.match(replayed, /^With donation/);
    assert.equal(got.get(now), stepAt(today, x), `today at ${x}`);
    assert.ok(got.get(replayed) <= expected.predicted_peak_bytes, `replayed at ${x}`);
    return got.get(replayed);
  };
  // Every program position under the pointer: today's heap is the
  // report's, and the replayed heap reaches the predicted peak (the curves
  // hold the heap after each position's events, so a peak the analyzer
  // places at position p reads at p + 1 on both).
  const last = today.at(-1)[0];
  const replayed = [];
  for (let x = 0; x <= last; x += 1) {
    await hoverAt(canvas, x);
    await page.waitForFunction(([el, want]) => el.dataset.x === String(want), [await readout.elementHandle(), x], { timeout: TIMEOUT });
    replayed.push(await check(x));
  }
  assert.equal(Math.max(...replayed), expected.predicted_peak_bytes, "the replay's peak, read on its curve");
  assert.equal(Math.max(...today.map((p) => p[1])), module.peak_bytes);
  // The keyboard steps through the same positions.
  await page.mouse.move(0, 0);
  await canvas.focus();
  await page.keyboard.press("Home");
  assert.equal(await readout.getAttribute("data-x"), String(today[0][0]));
  const top = replayed.indexOf(expected.predicted_peak_bytes);
  for (let i = 0; i < top; i += 1) await page.keyboard.press("ArrowRight");
  assert.equal(await readout.getAttribute("data-x"), String(top));
  assert.equal(await check(top), expected.predicted_peak_bytes);
  await page.keyboard.press("End");
  assert.equal(Number(await readout.getAttribute("data-x")), last);
  await check(last);
  await page.keyboard.press("Escape");
  assert.equal(await readout.getAttribute("data-x"), null);
  assert.deepEqual(opened.pageErrors, []);
});
