// Browser tests of the padding-waste view (app/src/views/padding.rs) and the
// memory-over-time view (app/src/views/steps.rs), on real inputs dropped
// through the page's own file inputs:
// - fixtures/padding-zoo-v5e (a TPU compile of the padding zoo): the waste
//   of a known shape is checked against the compiler's buffer assignment
//   (the sizes of the values of that shape minus their unpadded sizes,
//   computed from the shape's dimensions);
// - fixtures/steps/*.log (JAX CPU loops logging memory each step): the
//   leak's slope is checked against the true growth the log's header states,
//   and hover values against the log's own lines.
// Also: charts draw (non-blank canvas pixels), table sorting (mouse and
// keyboard), the timeline link, SVG/PNG/CSV exports. Screenshots go to out/.
//
// Environment: CHROMIUM (default /usr/bin/chromium), OOMSCOPE_DIST (default
// dist/ at the repository root, built by `trunk build --release`).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { csvRows, launchChromium, serveDist } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.resolve(process.env.OOMSCOPE_DIST || path.join(ROOT, "dist"));
const OUT = path.join(HERE, "out");
const ZOO = path.join(ROOT, "fixtures/padding-zoo-v5e");
const STEPS = path.join(ROOT, "fixtures/steps");
const TIMEOUT = 90_000;
const GIB = 2 ** 30;


// The shape whose waste is checked, as the compiler prints it.
const SHAPE = "s32[100000,10]{1,0:T(8,128)}";

let server;
let origin;
let browser;
let page;
const pageErrors = [];

/** Bytes of a shape's data alone: the product of its dimensions × element size. */
function unpaddedBytes(shape) {
  const m = /^([a-z0-9]+)\[([0-9,]*)\]/.exec(shape);
  const bits = { s32: 32, f32: 32, u32: 32, bf16: 16, f16: 16, s8: 8, u8: 8 }[m[1]];
  const elements = m[2] ? m[2].split(",").map(Number).reduce((a, b) => a * b, 1) : 1;
  return (elements * bits) / 8;
}

/** From the buffer assignment: the values of `shape` and their allocated sizes. */
function assignedValues(shape) {
  const file = fs.readdirSync(ZOO).find((f) => f.endsWith("after_optimizations-buffer-assignment.txt"));
  const text = fs.readFileSync(path.join(ZOO, file), "utf8");
  const values = [];
  for (const line of text.split("\n")) {
    const m = /^\s*value: <\d+ (\S+) @\d+> \(size=(\d+),offset=\d+\): (.+)$/.exec(line);
    if (m && m[3].trim() === shape) values.push({ name: m[1], size: Number(m[2]) });
  }
  return values;
}

/** Non-white pixels of a canvas. */
async function inkedPixels(locator) {
  return locator.evaluate((c) => {
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && d[i] + d[i + 1] + d[i + 2] < 700) n++;
    return n;
  });
}

async function download(button) {
  const [file] = await Promise.all([page.waitForEvent("download", { timeout: TIMEOUT }), button.click()]);
  const body = fs.readFileSync(await file.path());
  fs.writeFileSync(path.join(OUT, file.suggestedFilename()), body);
  return { name: file.suggestedFilename(), body };
}

before(async () => {
  assert.ok(fs.existsSync(path.join(DIST, "index.html")), "dist/index.html missing: run `trunk build --release` first");
  fs.mkdirSync(OUT, { recursive: true });
  ({ server, origin } = await serveDist(DIST));
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  page = await context.newPage();
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.locator(".verdict").waitFor({ timeout: TIMEOUT });
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
});

test("padding: a dropped TPU dump shows the compiler's waste for a known shape", async () => {
  await page.setInputFiles("#folder-input", ZOO);
  await page.locator("#padding .padding-subject").waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });

  const values = assignedValues(SHAPE);
  assert.ok(values.length >= 1, `the buffer assignment has values of ${SHAPE}`);
  const expected = values.reduce((sum, v) => sum + v.size - unpaddedBytes(SHAPE), 0);
  assert.equal(expected, 2 * (51_200_000 - 4_000_000), "sanity: 10 → 128 lanes, two values");

  await page.locator('#padding .segment[data-group="shape"]').click();
  const row = page.locator(`#padding table.padding-table tbody tr[data-key="${SHAPE}"]`);
  await row.waitFor({ timeout: TIMEOUT });
  assert.equal(Number(await row.getAttribute("data-waste")), expected);
  assert.equal(Number(await row.locator("td.waste .bytes").getAttribute("data-bytes")), expected);
  assert.equal((await row.locator("td").nth(1).textContent()).trim(), String(values.length), "buffer count");

  // Padding at the peak, as bytes and as a share of the peak.
  const peakPadding = Number(await page.locator('#padding [data-field="peak_padding"] .bytes').getAttribute("data-bytes"));
  const peak = Number(await page.locator('#padding [data-field="peak"] .bytes').getAttribute("data-bytes"));
  assert.ok(peakPadding >= expected && peakPadding < peak, `peak padding ${peakPadding} within the peak ${peak}`);
  const share = await page.locator('#padding [data-field="peak_padding"] .stat-note').textContent();
  assert.equal(share.trim(), `${((peakPadding * 100) / peak).toFixed(1)}% of the peak`);

  // Both charts drew.
  for (const chart of ["buffers", "groups"]) {
    const pixels = await inkedPixels(page.locator(`#padding canvas[data-chart="${chart}"]`));
    assert.ok(pixels > 2000, `${chart} chart has ${pixels} inked pixels`);
  }

  // Per-dimension breakdown: the minor dimension (10 → 128) costs the rest.
  await row.click();
  const dim = page.locator('#padding .padding-breakdown tr[data-dimension="1"]');
  await dim.waitFor({ timeout: TIMEOUT });
  assert.equal(Number(await dim.locator(".bytes").getAttribute("data-bytes")), (128 - 10) * 100_000 * 4);
  assert.ok((await page.locator("#padding .padding-breakdown .estimate").textContent()).includes("estimate"));
  await page.locator("#padding").screenshot({ path: path.join(OUT, "padding-zoo-v5e.png") });
});

test("padding: the table sorts from its headers, by mouse and by keyboard", async () => {
  await page.locator('#padding .segment[data-group="buffer"]').click();
  const wastes = () =>
    page.locator("#padding table.padding-table tbody tr").evaluateAll((rows) => rows.map((r) => Number(r.dataset.waste)));
  const header = (name) => page.locator(`#padding table.padding-table th:has(button[data-sort="${name}"])`);
  assert.equal(await header("Waste").getAttribute("aria-sort"), "descending");
  let w = await wastes();
  assert.ok(w.length > 5);
  assert.deepEqual(w, [...w].sort((a, b) => b - a), "largest waste first");

  await page.locator('#padding button[data-sort="Waste"]').click();
  assert.equal(await header("Waste").getAttribute("aria-sort"), "ascending");
  w = await wastes();
  assert.deepEqual(w, [...w].sort((a, b) => a - b), "smallest waste first");

  // Keyboard: focus the Expansion header's button, Enter sorts by it.
  await page.locator('#padding button[data-sort="Expansion"]').focus();
  await page.keyboard.press("Enter");
  assert.equal(await header("Expansion").getAttribute("aria-sort"), "descending");
  const expansions = await page
    .locator("#padding table.padding-table tbody tr td:nth-child(6)")
    .evaluateAll((cells) => cells.map((c) => parseFloat(c.textContent)));
  assert.deepEqual(expansions, [...expansions].sort((a, b) => b - a), "largest expansion first");
});

test("padding: a buffer row pins the buffer in the timeline; exports", async () => {
  await page.locator('#padding button[data-sort="Waste"]').click();
  const values = assignedValues(SHAPE);
  const first = page.locator("#padding table.padding-table tbody tr").first();
  const name = await first.getAttribute("data-key");
  const bare = (n) => n.replace(/\{[0-9,]*\}$/, "");
  assert.ok(values.some((v) => bare(v.name) === bare(name)), `the most wasteful buffer ${name} is a ${SHAPE} value`);
  await first.focus();
  await page.keyboard.press("Enter");
  const pinned = page.locator(`#modules .timeline-pinned[data-buffer="${name}"]`);
  await pinned.waitFor({ timeout: TIMEOUT });

  const svg = await download(page.locator('#padding button[data-export="svg"]'));
  const text = svg.body.toString("utf8");
  assert.ok(text.startsWith("<svg") && text.trim().endsWith("</svg>"));
  assert.ok(text.includes(name), "the SVG names the buffer");
  const png = await download(page.locator('#padding button[data-export="png"]'));
  assert.deepEqual([...png.body.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], "a PNG file");
  await page.locator('#padding .segment[data-group="shape"]').click();
  const csv = csvRows((await download(page.locator('#padding button[data-export="csv"]'))).body.toString("utf8"));
  const head = csv[0];
  const shapeRow = csv.find((r) => r[0] === SHAPE);
  assert.ok(shapeRow, "the shape is in the CSV");
  const expected = values.reduce((sum, v) => sum + v.size - unpaddedBytes(SHAPE), 0);
  assert.equal(Number(shapeRow[head.indexOf("padding_bytes")]), expected);
});

test("steps: the leak's slope matches the log's true growth; hover shows the log's values", async () => {
  const logs = ["jax_cpu_leak.log", "jax_cpu_steady.log", "jax_cpu_sawtooth.log"].map((f) => path.join(STEPS, f));
  await page.setInputFiles("#file-input", logs);
  await page.locator("#steps .steps-table").waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });

  const leakLog = fs.readFileSync(logs[0], "utf8");
  const truth = Number(/^# true_growth_bytes_per_step: (\d+)/m.exec(leakLog)[1]);
  const rows = page.locator("#steps .steps-table tbody tr");
  assert.equal(await rows.count(), 3, "one series per log");
  const leak = rows.filter({ hasText: "jax_cpu_leak.log" });
  const slope = Number(await leak.locator("td.slope").getAttribute("data-slope"));
  assert.ok(Math.abs(slope - truth) / truth < 0.1, `slope ${slope} within 10% of ${truth}`);
  const steady = rows.filter({ hasText: "jax_cpu_steady.log" });
  const steadySlope = Number(await steady.locator("td.slope").getAttribute("data-slope"));
  assert.ok(Math.abs(steadySlope) < truth / 10, `steady slope ${steadySlope} is flat`);

  const canvas = page.locator("#steps .plot-canvas").first();
  assert.ok((await inkedPixels(canvas)) > 3000, "the chart drew");

  // Hover at the middle of the plot: exact values from the log's lines.
  const perStep = new Map();
  for (const m of leakLog.matchAll(/step: +(\d+) [^\n]*?memory: +([0-9.]+)GiB/g)) perStep.set(Number(m[1]), Number(m[2]) * GIB);
  // Only the leak shown, so the hover reads it.
  for (const other of ["jax_cpu_steady.log", "jax_cpu_sawtooth.log"]) {
    await page.locator("#steps .series-toggle", { hasText: other }).locator("input").uncheck();
  }
  await page.locator("#steps .fit-projection").uncheck();
  const plot = (await canvas.getAttribute("data-plot")).split(",").map(Number);
  await canvas.hover({ position: { x: plot[0] + plot[2] / 2, y: plot[1] + plot[3] / 2 } });
  const tooltip = page.locator("#steps .plot-tooltip");
  await tooltip.waitFor({ timeout: TIMEOUT });
  const step = Math.round(Number(await tooltip.locator(".tt-x").getAttribute("data-x")));
  const bytes = Number(await tooltip.locator(".tt-row .bytes").first().getAttribute("data-bytes"));
  assert.ok(perStep.has(step), `hovered step ${step} is a logged step`);
  assert.ok(Math.abs(bytes - perStep.get(step)) <= 0.005 * GIB, `hover ${bytes} ≈ log ${perStep.get(step)} at step ${step}`);
  await page.locator("#steps").screenshot({ path: path.join(OUT, "steps-hover.png") });

  // Back to all series with the projection, for the picture and the exports.
  for (const other of ["jax_cpu_steady.log", "jax_cpu_sawtooth.log"]) {
    await page.locator("#steps .series-toggle", { hasText: other }).locator("input").check();
  }
  await page.mouse.move(0, 0);
  assert.equal(await page.locator("#steps .fit-projection").isChecked(), false, "a projection 30× the data's span is not drawn at first");
  await page.locator("#steps").screenshot({ path: path.join(OUT, "steps.png") });
  await page.locator("#steps .fit-projection").check();
  await page.locator("#steps .plot-canvas").first().screenshot({ path: path.join(OUT, "steps-projection.png") });

  const toolbar = page.locator("#steps .plot-toolbar").first();
  const svg = (await download(toolbar.locator("button", { hasText: "SVG" }))).body.toString("utf8");
  // plotters draws a dashed trend as one short polyline per dash, in its
  // series' colour (the first series' is the palette's first, #0969da).
  const dashes = svg.match(/stroke="#0969DA" stroke-width="\d+" points="-?\d+,-?\d+ -?\d+,-?\d+ "/gi) ?? [];
  assert.ok(svg.startsWith("<svg") && svg.includes("Memory per step") && dashes.length > 10, `SVG with its title and trend lines (${dashes.length} dashes)`);
  const csv = csvRows((await download(toolbar.locator("button", { hasText: "CSV" }))).body.toString("utf8"));
  const leakPoints = csv.filter((r) => r[3].endsWith("jax_cpu_leak.log"));
  assert.ok(leakPoints.length > 10);
  for (const r of leakPoints) {
    const logged = perStep.get(Number(r[5]));
    assert.ok(logged !== undefined && Math.abs(Number(r[6]) - logged) <= 0.005 * GIB, `CSV row ${r} matches the log`);
  }
  const png = await download(toolbar.locator("button", { hasText: "PNG" }));
  assert.deepEqual([...png.body.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], "a PNG file");
});

test("views: every control is labelled; no script error", async () => {
  const unlabelled = await page.evaluate(() =>
    [...document.querySelectorAll("#padding button, #padding select, #padding input, #steps button, #steps input, #padding canvas, #steps canvas")]
      .filter((el) => !(el.getAttribute("aria-label") || el.closest("label") || (el.tagName !== "INPUT" && el.textContent.trim())))
      .map((el) => el.outerHTML.slice(0, 80)),
  );
  assert.deepEqual(unlabelled, []);
  assert.deepEqual(pageErrors, []);
});
