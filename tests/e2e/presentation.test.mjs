// Browser tests of issue 29's presentation half, on real data: a train step
// that runs out of memory by 514 MiB (fixtures/pair-donate/plain: 8 GiB of
// weights, 8 GiB of their updated copies, 64 MiB of data), its timeline and
// peak table; the PyTorch snapshot curve and memory-timeline chart with axes
// and true legend colours; JAX device bars in device order.
//
// Expected buffers come from XProf's own Memory Viewer output for the same
// HloProto (the fixture's memory_viewer.json: maxHeap, the peak set, with
// each buffer's group); the compiler's limit from its compile.log.
//
// Environment: CHROMIUM (default /usr/bin/chromium), OOMSCOPE_DIST (default
// dist/ at the repository root), OOMSCOPE_CORPUS.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { corpusDir, dropFiles, launchChromium, serveDist, timelineBufferAt, timelineFrame } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.resolve(process.env.OOMSCOPE_DIST || path.join(ROOT, "dist"));
const OUT = path.join(HERE, "out");
const CORPUS = corpusDir();
const TRAIN = path.join(ROOT, "fixtures/pair-donate/plain");
const PREFIX = "module_0000.jit_sgd_step.cl_1014260217";
const TIMEOUT = 60_000;
const MIB = 2 ** 20;

const oracle = JSON.parse(fs.readFileSync(path.join(TRAIN, `${PREFIX}.memory_viewer.json`), "utf8"));
const peakSet = oracle.maxHeap.filter((e) => e.groupName);
const parameters = peakSet.filter((e) => e.groupName === "Parameter");
const outputs = peakSet.filter((e) => e.groupName === "Output");

let server;
let origin;
let browser;
let page;
const pageErrors = [];

/** Opens a fresh page on the example report. */
async function freshPage() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const p = await context.newPage();
  p.on("pageerror", (error) => pageErrors.push(String(error)));
  await p.goto(origin + "/", { timeout: TIMEOUT });
  await p.locator(".example-banner").waitFor({ timeout: TIMEOUT });
  return p;
}

async function settled(p) {
  await p.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
}

const frame = () => timelineFrame(page);
const bufferAt = (position, bytes) => timelineBufferAt(page, position, bytes, TIMEOUT);

/** A screenshot of `locator` with the page's sticky header out of the way. */
async function screenshotUnderHeader(p, locator, name) {
  await p.evaluate(() => {
    const header = document.querySelector(".page-header");
    if (header) header.style.position = "static";
  });
  await locator.screenshot({ path: path.join(OUT, name) });
  await p.evaluate(() => {
    const header = document.querySelector(".page-header");
    if (header) header.style.position = "";
  });
}

/** `rgb(…)` → `#rrggbb`. */
const hex = (css) => "#" + (css.match(/\d+/g) || []).slice(0, 3).map((v) => Number(v).toString(16).padStart(2, "0")).join("");

before(async () => {
  assert.ok(fs.existsSync(path.join(DIST, "index.html")), `${DIST}/index.html missing: run \`trunk build --release\` first`);
  fs.mkdirSync(OUT, { recursive: true });
  ({ server, origin } = await serveDist(DIST));
  browser = await launchChromium();
  page = await freshPage();
  await page.setInputFiles("#file-input", [path.join(TRAIN, `${PREFIX}.after_optimizations.hlo.pb`), path.join(TRAIN, "compile.log")]);
  await page.locator(".timeline-canvas[data-x1]").waitFor({ timeout: TIMEOUT });
  await settled(page);
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
});

test("a train step's timeline lists every buffer XProf has at the peak, grouped, parameters and outputs first", async () => {
  const rows = await page.locator("table.timeline-peak tbody tr[data-buffer]").evaluateAll((trs) =>
    trs.map((tr) => ({ name: tr.dataset.buffer, cells: [...tr.cells].map((c) => c.textContent.trim()) })),
  );
  const byName = new Map(rows.map((r) => [r.name, r]));
  for (const e of peakSet) {
    const row = byName.get(e.instructionName);
    assert.ok(row, `${e.groupName} ${e.instructionName} is listed`);
    assert.equal(row.cells[4], e.groupName === "Output" ? "output" : e.groupName.toLowerCase(), `${e.instructionName}'s kind`);
  }
  // Grouped: parameters, outputs, temporaries, each largest first.
  const groups = await page.locator("table.timeline-peak tr.group-row").evaluateAll((trs) => trs.map((tr) => tr.dataset.group));
  assert.deepEqual(groups.slice(0, 3), ["Parameters", "Outputs (maybe-live-out)", "Temporaries"]);
  assert.equal(rows[0].cells[4], "parameter");
  assert.equal(rows[parameters.length].cells[4], "output");
  // No real buffer reads as 0.0% of the peak.
  for (const r of rows) assert.ok(!/^0(\.0+)?%$/.test(r.cells[2]), `${r.name}: ${r.cells[2]}`);
  // The legend names what is drawn, not "live throughout (no buffer)".
  assert.ok(!(await page.locator("section.timeline .legend").textContent()).includes("live throughout"));
});

test("each weight is paired with its output of the same shape, in the table and on the chart", async () => {
  const note = await page.locator('[data-testid="pair-note"]').textContent();
  const weights = parameters.filter((p) => outputs.some((o) => o.shapeString === p.shapeString));
  assert.equal(weights.length, 8);
  assert.match(note, new RegExp(`^${weights.length} parameters have an output of the same shape`));
  const partners = new Set();
  for (const w of weights) {
    const link = page.locator(`table.timeline-peak tr[data-buffer="${w.instructionName}"] .pair-link`);
    const partner = await link.getAttribute("data-partner");
    const output = outputs.find((o) => o.instructionName === partner);
    assert.ok(output, `${w.instructionName} is paired with an output, not ${partner}`);
    assert.equal(output.shapeString, w.shapeString);
    partners.add(partner);
  }
  assert.equal(partners.size, weights.length, "one output per weight");
  // Clicking the pair pins the output.
  const first = weights[0].instructionName;
  await page.locator(`table.timeline-peak tr[data-buffer="${first}"] .pair-link`).click();
  const pinned = await page.locator(".timeline-pinned").getAttribute("data-buffer");
  assert.ok(partners.has(pinned), `the pair's output is pinned: ${pinned}`);
  await page.locator(".timeline-pinned button", { hasText: "Unpin" }).click();

  // On the chart, the whole-program buffers are bands under the temporaries:
  // weights (largest first) from 0, then the outputs above all parameters.
  const f = await frame();
  const middle = (f.x0 + f.x1) / 2;
  const paramBytes = parameters.reduce((s, p) => s + p.logicalBufferSizeMib * MIB, 0);
  const low = await bufferAt(middle, 512 * MIB);
  assert.ok(weights.some((w) => w.instructionName === low), `a weight at 512 MiB: ${low}`);
  const high = await bufferAt(middle, paramBytes + 512 * MIB);
  assert.ok(outputs.some((o) => o.instructionName === high), `an output above the parameters: ${high}`);
  assert.match(await page.locator(".timeline-tooltip").textContent(), /whole program/);
  await page.mouse.move(0, 0);
  await screenshotUnderHeader(page, page.locator("section.timeline .timeline-stage"), "timeline-train-step.png");
  await screenshotUnderHeader(page, page.locator("section.timeline"), "timeline-train-step-table.png");
});

test("the limit's label is not drawn over the heap line", async () => {
  const [download] = await Promise.all([
    page.waitForEvent("download", { timeout: TIMEOUT }),
    page.locator(".timeline-toolbar button", { hasText: "SVG" }).click(),
  ]);
  const svg = fs.readFileSync(await download.path(), "utf8");
  const label = /<text x="([\d.]+)" y="([\d.]+)" fill="#cf222e" text-anchor="(\w+)"[^>]*>(HBM limit [^<]+)<\/text>/.exec(svg);
  assert.ok(label, "the limit is labelled");
  const [x, y, anchor, text] = [Number(label[1]), Number(label[2]), label[3], label[4]];
  const width = text.length * 7.2;
  const [x0, x1] = anchor === "end" ? [x - width, x] : [x, x + width];
  const box = { x0, x1, y0: y - 7, y1: y + 7 };
  const heap = /<polyline fill="none" points="([^"]+)" stroke="#1f2328"/.exec(svg);
  assert.ok(heap, "the heap line is drawn");
  const points = heap[1].trim().split(/\s+/).map((p) => p.split(",").map(Number));
  for (let i = 1; i < points.length; i++) {
    const [[ax, ay], [bx, by]] = [points[i - 1], points[i]];
    const crosses = Math.max(ax, bx) >= box.x0 && Math.min(ax, bx) <= box.x1 && Math.max(ay, by) >= box.y0 && Math.min(ay, by) <= box.y1;
    assert.ok(!crosses, `the heap line (${ax},${ay})–(${bx},${by}) crosses the label ${JSON.stringify(box)}`);
  }
});

test("the snapshot curve has labelled axes, a legend in its colours, no unlabelled bar, a styled export", async () => {
  const p = await freshPage();
  const name = "Constructor-Sun__code_location__memory_snapshot.pickle";
  await dropFiles(p, [{ name, path: path.join(CORPUS, "snapshots", name) }]);
  await p.locator('[data-testid="snapshot-oom"]').first().waitFor({ timeout: TIMEOUT });
  await settled(p);
  // The device that ran out.
  const curve = p.locator('[data-testid="memory-snapshot"]', { has: p.locator('[data-testid="snapshot-oom"]') }).first().locator('[data-testid="snapshot-curve"]');
  const texts = await curve.locator("svg text").allTextContents();
  assert.ok(texts.some((t) => /trace event/.test(t)), `an x axis title: ${texts}`);
  assert.ok(texts.filter((t) => /^\d+(\.\d+)? (B|KiB|MiB|GiB)$/.test(t.trim())).length >= 3, `byte ticks: ${texts}`);
  assert.ok(texts.some((t) => /^out of memory at event/.test(t.trim())), `the OOM is labelled: ${texts.map((t) => t.trim())}`);
  // The allocated swatch is the allocated area's colour, and visible.
  const swatch = curve.locator(".legend-item", { hasText: "allocated" }).locator(".legend-swatch");
  const style = await swatch.evaluate((s) => ({ bg: getComputedStyle(s).backgroundColor, h: s.getBoundingClientRect().height, border: getComputedStyle(s).borderTopWidth }));
  assert.equal(hex(style.bg), (await curve.locator('polygon[data-series="Allocated"]').getAttribute("fill")).toLowerCase());
  assert.ok(style.h >= 10 && style.border === "0px", JSON.stringify(style));
  // No grey bar without a legend: the phases are listed, named.
  assert.equal(await curve.locator("svg rect.phase").count(), 0);
  // Export CSV is a page button, not the browser's default one.
  const button = curve.locator("button", { hasText: "Export CSV" });
  assert.ok((await button.getAttribute("class")).split(" ").includes("button"));
  assert.equal(await button.evaluate((b) => getComputedStyle(b).paddingLeft), "10px");
  await curve.locator(".chart-svg").hover();
  assert.match(await curve.locator(".curve-readout").textContent(), /^Event [\d,]+: Allocated: .+; Reserved: .+$/);
  await curve.screenshot({ path: path.join(OUT, "snapshot-curve.png") });
  await p.context().close();
});

test("the PyTorch memory timeline has axes with units and legend swatches in the colours of the areas they name", async () => {
  const p = await freshPage();
  const name = "tonghuikang__optimizer-memory-profiles__profiling__modal_gpu_adam__profile.raw.json.gz";
  await dropFiles(p, [{ name, path: path.join(CORPUS, "runtime", name) }]);
  const chart = p.locator('[data-testid="memory-timeline"]').first();
  await chart.waitFor({ timeout: TIMEOUT });
  await settled(p);
  const texts = await chart.locator("svg text").allTextContents();
  assert.ok(texts.some((t) => /^time since the first event \((s|ms|µs)\)$/.test(t.trim())), `a time axis: ${texts}`);
  assert.ok(texts.filter((t) => /^\d+(\.\d+)? (B|KiB|MiB|GiB)$/.test(t.trim())).length >= 3, `byte ticks: ${texts}`);
  const items = await chart.locator(".legend-item").evaluateAll((els) =>
    els.map((el) => {
      const s = el.querySelector(".legend-swatch");
      const cs = getComputedStyle(s);
      return { label: el.dataset.series, bg: cs.backgroundColor, h: s.getBoundingClientRect().height, border: cs.borderTopWidth };
    }),
  );
  assert.ok(items.length >= 3, `legend: ${JSON.stringify(items)}`);
  const fills = new Set();
  for (const item of items) {
    const fill = (await chart.locator(`polygon[data-series="${item.label}"]`).getAttribute("fill")).toLowerCase();
    assert.equal(hex(item.bg), fill, `${item.label}'s swatch is its area's colour`);
    assert.ok(item.h >= 10 && item.border === "0px", `${item.label}'s swatch shows its colour: ${JSON.stringify(item)}`);
    fills.add(fill);
  }
  assert.equal(fills.size, items.length, "every category has its own colour");
  await chart.screenshot({ path: path.join(OUT, "runtime-timeline.png") });
  await p.context().close();
});

test("JAX device bars are in device order", async () => {
  const p = await freshPage();
  const file = path.join(ROOT, "fixtures/jax-memory-profiles/sharded_8dev.prof");
  await dropFiles(p, [{ name: "sharded_8dev.prof", path: file }]);
  const profile = p.locator('[data-testid="device-memory-profile"]').first();
  await profile.waitFor({ timeout: TIMEOUT });
  await settled(p);
  const devices = await profile.locator(".runtime-device > span:first-child").allTextContents();
  assert.equal(devices.length, 8);
  const numbers = devices.map((d) => Number(/(\d+)$/.exec(d)[1]));
  assert.deepEqual(numbers, [...numbers].sort((a, b) => a - b), `in order: ${devices}`);
  await profile.screenshot({ path: path.join(OUT, "device-bars.png") });
  await p.context().close();
  assert.deepEqual(pageErrors, []);
});
