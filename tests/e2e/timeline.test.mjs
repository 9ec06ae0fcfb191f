// Browser tests of the buffer-lifetime timeline (app/src/views/timeline.rs)
// on a real compiler output: the 4-layer transformer training step's
// HloProto (fixtures/transformer-step). Every expected number and position
// comes from XProf's own Memory Viewer output for that HloProto (the
// fixture's memory_viewer.json oracle: bufferBlocks with offset, size,
// startStep and endStep; heapSizes; hloInstructionNames), never from the
// page.
//
// Placement checked: a buffer's band spans positions [startStep, endStep]
// and bytes [indefinite + offset, indefinite + offset + size), where
// `indefinite` is the Memory Viewer's indefinite allocations (the bytes live
// throughout, drawn as the base band), exactly as the heap curve counts them.
//
// Environment: CHROMIUM (default /usr/bin/chromium), OOMSCOPE_DIST (default
// dist/ at the repository root, built by `trunk build --release`).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { launchChromium, serveDist } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.resolve(process.env.OOMSCOPE_DIST || path.join(ROOT, "dist"));
const OUT = path.join(HERE, "out");
const FIXTURE = path.join(ROOT, "fixtures/transformer-step");
const PREFIX = "module_0000.jit_adam_step.cl_1014260217";
const TIMEOUT = 60_000;
const MIB = 2 ** 20;


const oracle = JSON.parse(fs.readFileSync(path.join(FIXTURE, `${PREFIX}.memory_viewer.json`), "utf8"));
const indefinite = Math.round(oracle.indefiniteBufferAllocationMib * MIB);
const blocks = oracle.bufferBlocks.filter((b) => b.logicalBufferId >= 0 && b.size > 0);
const bySize = [...blocks].sort((a, b) => b.size - a.size);

let server;
let origin;
let browser;
let page;
const pageErrors = [];

/** The canvas's frame as it says in its data attributes. */
async function frame() {
  return page.locator(".timeline-canvas").evaluate((c) => {
    const [left, top, width, height] = c.dataset.plot.split(",").map(Number);
    const r = c.getBoundingClientRect();
    return {
      x0: Number(c.dataset.x0),
      x1: Number(c.dataset.x1),
      yMax: Number(c.dataset.yMax),
      left,
      top,
      width,
      height,
      pageLeft: r.left + window.scrollX,
      pageTop: r.top + window.scrollY,
      clientLeft: r.left,
      clientTop: r.top,
    };
  });
}

/** CSS-pixel point (relative to the canvas) of a position and a byte count. */
function point(f, position, bytes) {
  return {
    x: f.left + ((position - f.x0) / (f.x1 - f.x0)) * f.width,
    y: f.top + f.height - (bytes / f.yMax) * f.height,
  };
}

/** Centre of a block's band, where it is drawn thickest inside the view. */
function blockCentre(f, block) {
  const first = Math.max(block.startStep, f.x0);
  const last = Math.min(block.endStep + 1, f.x1);
  return point(f, (first + last) / 2, indefinite + block.offset + block.size / 2);
}

/** RGBA of the canvas at a CSS point. */
async function pixel(p) {
  return page.locator(".timeline-canvas").evaluate((c, p) => {
    const ratio = c.width / c.getBoundingClientRect().width;
    const d = c.getContext("2d").getImageData(Math.round(p.x * ratio), Math.round(p.y * ratio), 1, 1).data;
    return [d[0], d[1], d[2], d[3]];
  }, p);
}

/** The fields of one RFC 4180 CSV line. */
function csvFields(line) {
  const fields = [];
  const re = /("((?:[^"]|"")*)"|[^,]*)(,|$)/g;
  for (let m = re.exec(line); m && m.index < line.length; m = re.exec(line)) {
    fields.push(m[2] !== undefined ? m[2].replace(/""/g, '"') : m[1]);
    if (m[3] === "") break;
  }
  return fields;
}

const isWhite = ([r, g, b]) => r > 245 && g > 245 && b > 245;

async function hover(p) {
  const f = await frame();
  await page.mouse.move(f.clientLeft + p.x, f.clientTop + p.y);
}

async function waitForRange(predicate) {
  for (let i = 0; i < 50; i++) {
    const f = await frame();
    if (predicate(f)) return f;
    await page.waitForTimeout(50);
  }
  return frame();
}

before(async () => {
  assert.ok(fs.existsSync(path.join(DIST, "index.html")), `${DIST}/index.html missing: run \`trunk build --release\` first`);
  fs.mkdirSync(OUT, { recursive: true });
  ({ server, origin } = await serveDist(DIST));
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  page = await context.newPage();
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.locator(".verdict").waitFor({ timeout: TIMEOUT });
  await page.setInputFiles("#file-input", [path.join(FIXTURE, `${PREFIX}.after_optimizations.hlo.pb`)]);
  await page.locator(".timeline-canvas[data-x1]").waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
});

test("the timeline spans the program and draws bands where XProf places the buffers", async () => {
  const f = await frame();
  assert.equal(f.x0, 0);
  assert.equal(f.x1, oracle.heapSizes.length, "x axis = every heap-simulator position");
  assert.ok(f.yMax >= oracle.peakHeapMib * MIB, "the y axis reaches the peak");
  await page.locator(".timeline-canvas").scrollIntoViewIfNeeded();
  await page.mouse.move(0, 0);

  // The ten largest buffers: their band's centre is coloured.
  for (const block of bySize.slice(0, 10)) {
    const colour = await pixel(blockCentre(f, block));
    assert.ok(!isWhite(colour), `${block.name} is drawn at its place: got ${colour}`);
  }
  // The base band (live throughout) at the start, nothing above the peak.
  assert.ok(!isWhite(await pixel(point(f, 1, indefinite / 2))), "the always-live base band is drawn");
  const abovePeak = point(f, oracle.peakHeapSizePosition, (oracle.peakHeapMib * MIB + f.yMax) / 2);
  assert.ok(isWhite(await pixel(abovePeak)), "nothing is drawn above the peak");
  const last = oracle.heapSizes.length - 1;
  // At every 7th position, a probe between the heap there and the peak is
  // coloured exactly when XProf has a buffer at that address then.
  for (let at = 0; at < last; at += 7) {
    const probe = ((oracle.heapSizes[at] + oracle.peakHeapMib) / 2) * MIB;
    const occupied = blocks.some(
      (b) => b.startStep <= at && at <= b.endStep && indefinite + b.offset <= probe && probe < indefinite + b.offset + b.size,
    );
    const colour = await pixel(point(f, at + 0.5, probe));
    assert.equal(!isWhite(colour), occupied, `position ${at}, ${probe} bytes: ${occupied ? "occupied" : "free"} (${colour})`);
  }

  await page.locator("section.timeline").screenshot({ path: path.join(OUT, "timeline-transformer-step.png") });
});

test("hovering a band shows that buffer, with its size and source", async () => {
  const f = await frame();
  for (const block of bySize.slice(0, 5)) {
    await hover(blockCentre(f, block));
    const tip = page.locator(".timeline-tooltip");
    await tip.waitFor({ timeout: TIMEOUT });
    assert.equal(await tip.getAttribute("data-buffer"), block.name);
    assert.equal(Number(await tip.locator(".bytes").first().getAttribute("data-bytes")), block.size);
    assert.ok((await tip.textContent()).includes(block.shapeString), `tooltip shows ${block.shapeString}`);
    assert.ok(
      (await tip.textContent()).includes(`${path.basename(block.sourceInfo.fileName)}:${block.sourceInfo.lineNumber}`),
      "tooltip shows the source line",
    );
    assert.ok((await tip.textContent()).includes(`positions ${block.startStep}–${block.endStep}`), "lifetime");
  }
  await page.locator(".timeline").screenshot({ path: path.join(OUT, "timeline-hover.png") });
  await page.mouse.move(0, 0);
  await page.locator(".timeline-tooltip").waitFor({ state: "detached", timeout: TIMEOUT });
});

test("clicking a band pins it with its defining and last-using instructions, linked to the peak table", async () => {
  const f = await frame();
  const block = bySize.find((b) => b.startStep <= oracle.peakHeapSizePosition && oracle.peakHeapSizePosition <= b.endStep);
  const p = blockCentre(f, block);
  const scrolledBefore = await page.evaluate(() => window.scrollY);
  await page.mouse.click(f.clientLeft + p.x, f.clientTop + p.y);
  const pinned = page.locator(".timeline-pinned");
  await pinned.waitFor({ timeout: TIMEOUT });
  assert.equal(await pinned.getAttribute("data-buffer"), block.name);
  // The peak table scrolls its own box to the row; the page stays put
  // under the pointer.
  await page.waitForTimeout(100);
  assert.equal(await page.evaluate(() => window.scrollY), scrolledBefore, "pinning does not scroll the page");
  const rowInBox = await page.evaluate(() => {
    const row = document.querySelector("table.timeline-peak tr.selected").getBoundingClientRect();
    const box = document.querySelector(".timeline-table").getBoundingClientRect();
    return row.top >= box.top - 1 && row.bottom <= box.bottom + 1;
  });
  assert.ok(rowInBox, "the selected row is visible in the table's box");
  // XProf names each heap-simulator event by an instruction: the start
  // event is the defining one; the free event carries the buffer's own
  // name, so the last user is the nearest earlier event of another one.
  const names = oracle.hloInstructionNames;
  assert.equal((await pinned.locator('[data-field="defined"]').textContent()).trim(), names[block.startStep]);
  let user = names[block.endStep];
  if (user === names[block.startStep]) {
    for (let p = block.endStep - 1; p >= block.startStep; p--) {
      if (names[p] && names[p] !== user) {
        user = names[p];
        break;
      }
    }
  }
  const lastUse = (await pinned.locator('[data-field="last-use"]').textContent()).trim();
  assert.ok(lastUse.startsWith(user), `last used by ${user}: ${lastUse}`);
  const row = page.locator("table.timeline-peak tr.selected");
  assert.equal(await row.getAttribute("data-buffer"), block.name, "the peak table selects the pinned buffer");

  // And the other way: a table row pins its buffer.
  const other = page.locator("table.timeline-peak tbody tr").nth(1);
  const otherName = await other.getAttribute("data-buffer");
  await other.click();
  await page.locator(`.timeline-pinned[data-buffer="${otherName}"]`).waitFor({ timeout: TIMEOUT });
  await page.keyboard.press("Escape");
});

test("the peak table lists exactly the buffers XProf has live at the peak", async () => {
  const peak = oracle.peakHeapSizePosition;
  // The temporaries XProf draws live at the peak, and its peak set's
  // buffers live for the whole program (parameters, outputs; its merged
  // small entry aside), which the table lists too (issue 29).
  const whole = oracle.maxHeap.filter((e) => e.groupName && e.groupName !== "Temporary").map((e) => e.instructionName);
  const expected = [...blocks.filter((b) => b.startStep <= peak && peak <= b.endStep).map((b) => b.name), ...whole].sort();
  // The table shows its first 100 rows (then "Show all", windowed); its
  // CSV export lists every row.
  const [download] = await Promise.all([
    page.waitForEvent("download", { timeout: TIMEOUT }),
    page.locator(".timeline-toolbar button", { hasText: "CSV" }).click(),
  ]);
  const exported = fs.readFileSync(await download.path(), "utf8").trim().split("\r\n").slice(1).map((line) => csvFields(line)[0]);
  const listed = exported.filter((name) => name !== "other whole-program bytes").sort();
  assert.deepEqual(listed, expected);
  const shown = await page.locator("table.timeline-peak tbody tr[data-buffer]").evaluateAll((rows) => rows.map((r) => r.dataset.buffer));
  assert.equal(shown.length, Math.min(100, exported.length));
  assert.ok(shown.every((name) => exported.includes(name)));
  const heading = await page.locator("section.timeline h4.subhead").textContent();
  assert.match(heading, new RegExp(`^Buffers live at the peak \\(${exported.length}\\)`));
});

test("zooming and panning change the visible range; F fits again", async () => {
  const canvas = page.locator(".timeline-canvas");
  await canvas.focus();
  const full = await frame();
  await page.keyboard.press("w");
  await page.keyboard.press("w");
  // Both presses drawn: the range is then under 0.64 of the full one.
  const zoomed = await waitForRange((f) => f.x1 - f.x0 < (full.x1 - full.x0) * 0.6);
  assert.ok(zoomed.x1 - zoomed.x0 < (full.x1 - full.x0) * 0.6, `W zooms in: ${zoomed.x0}–${zoomed.x1}`);
  await page.keyboard.press("d");
  const panned = await waitForRange((f) => f.x0 > zoomed.x0);
  assert.ok(panned.x0 > zoomed.x0 && Math.abs(panned.x1 - panned.x0 - (zoomed.x1 - zoomed.x0)) < 1e-6, "D pans right");
  await page.keyboard.press("f");
  const fitted = await waitForRange((f) => f.x0 === 0 && f.x1 === full.x1);
  assert.deepEqual([fitted.x0, fitted.x1], [0, full.x1]);

  // Browser shortcuts (Ctrl/⌘ + 0, =, −, F) pass through untouched.
  await canvas.focus();
  await page.evaluate(() => {
    window.__prevented = [];
    document.addEventListener("keydown", (e) => window.__prevented.push(e.defaultPrevented), { once: false });
  });
  for (const key of ["Control+0", "Control+Equal", "Control+Minus", "Control+f"]) await page.keyboard.press(key);
  assert.deepEqual(await page.evaluate(() => window.__prevented.slice(-4)), [false, false, false, false], "Ctrl shortcuts are the browser's");
  const untouched = await frame();
  assert.deepEqual([untouched.x0, untouched.x1], [0, full.x1], "Ctrl shortcuts leave the view alone");

  // A plain wheel scrolls the page and leaves the view alone.
  const p = point(full, 100, 0);
  let here = await frame();
  await page.mouse.move(here.clientLeft + p.x, here.clientTop + here.top + 20);
  const scrolledBefore = await page.evaluate(() => window.scrollY);
  await page.mouse.wheel(0, 120);
  await page.waitForFunction((y) => window.scrollY !== y, scrolledBefore, { timeout: TIMEOUT });
  const scrolled = await frame();
  assert.deepEqual([scrolled.x0, scrolled.x1], [0, full.x1], "a plain wheel does not zoom");

  // Ctrl + wheel zooms around the pointer.
  here = await frame();
  await page.mouse.move(here.clientLeft + p.x, here.clientTop + here.top + 20);
  const before = await page.evaluate(() => window.scrollY);
  await page.keyboard.down("Control");
  await page.mouse.wheel(0, -400);
  await page.keyboard.up("Control");
  const wheeled = await waitForRange((f) => f.x1 - f.x0 < full.x1);
  assert.ok(wheeled.x0 < 100 && wheeled.x1 > 100 && wheeled.x1 - wheeled.x0 < full.x1, "Ctrl + wheel zooms around the pointer");
  assert.equal(await page.evaluate(() => window.scrollY), before, "Ctrl + wheel does not scroll the page");

  // Shift-drag zooms to the selected positions (the page scrolled: where
  // the canvas is now).
  await page.keyboard.press("f");
  Object.assign(full, await waitForRange((f) => f.x0 === 0 && f.x1 === full.x1));
  const a = point(full, 60, 0);
  const b = point(full, 120, 0);
  const y = full.clientTop + full.top + 30;
  await page.keyboard.down("Shift");
  await page.mouse.move(full.clientLeft + a.x, y);
  await page.mouse.down();
  await page.mouse.move(full.clientLeft + (a.x + b.x) / 2, y, { steps: 3 });
  await page.mouse.move(full.clientLeft + b.x, y, { steps: 3 });
  await page.mouse.up();
  await page.keyboard.up("Shift");
  const selected = await waitForRange((f) => f.x1 - f.x0 < 100);
  assert.ok(Math.abs(selected.x0 - 60) < 1 && Math.abs(selected.x1 - 120) < 1, `selection zoom: ${selected.x0}–${selected.x1}`);

  // Zoomed in, a band still sits at its place.
  const block = bySize.find((bl) => bl.startStep <= 90 && bl.endStep >= 90);
  await hover(blockCentre(selected, block));
  assert.equal(await page.locator(".timeline-tooltip").getAttribute("data-buffer", { timeout: TIMEOUT }), block.name);
  await page.mouse.move(0, 0);
  await page.locator("#timeline-reset").click();
  await waitForRange((f) => f.x0 === 0 && f.x1 === full.x1);
});

test("search finds a buffer by name, shape or op and pins it", async () => {
  const target = bySize[0];
  await page.locator("#timeline-search").fill(target.name);
  const first = page.locator(".timeline-search-results button").first();
  assert.equal(await first.getAttribute("data-buffer", { timeout: TIMEOUT }), target.name);
  await first.click();
  assert.equal(await page.locator(".timeline-pinned").getAttribute("data-buffer", { timeout: TIMEOUT }), target.name);

  // By shape: every buffer of that shape in the oracle, no more.
  await page.locator("#timeline-search").fill(target.shapeString);
  const count = Number(await page.locator(".timeline-search-results [data-count]").getAttribute("data-count", { timeout: TIMEOUT }));
  assert.equal(count, blocks.filter((b) => b.shapeString === target.shapeString).length);
  // Matches stay coloured, the rest fades.
  const f = await frame();
  const other = bySize.find((b) => b.shapeString !== target.shapeString && b.size > 100 * MIB);
  await page.waitForTimeout(100);
  const matched = await pixel(blockCentre(f, target));
  const faded = await pixel(blockCentre(f, other));
  const lightness = ([r, g, bl]) => r + g + bl;
  assert.ok(lightness(faded) > lightness(matched) + 150, `non-matches fade: ${faded} vs ${matched}`);
  await page.locator(".timeline").screenshot({ path: path.join(OUT, "timeline-search.png") });
  await page.locator("#timeline-search").fill("");
  await page.keyboard.press("Escape");
});

test("the chart exports as SVG and PNG and the peak table as CSV", async () => {
  const save = async (label) => {
    const [download] = await Promise.all([
      page.waitForEvent("download", { timeout: TIMEOUT }),
      page.locator(".timeline-toolbar button", { hasText: label }).click(),
    ]);
    return fs.readFileSync(await download.path());
  };
  const svg = (await save("SVG")).toString("utf8");
  assert.ok(svg.startsWith("<svg") && svg.trim().endsWith("</svg>"));
  assert.ok((svg.match(/<rect /g) || []).length >= 10, "bands as rectangles");
  assert.ok(svg.includes("peak "), "the peak label");
  const png = await save("PNG");
  assert.deepEqual([...png.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], "a PNG file");
  const csv = (await save("CSV")).toString("utf8").trim().split("\r\n");
  assert.equal(csv[0].split(",")[0], "name");
  const rows = Number(/\((\d+)\)/.exec(await page.locator("section.timeline h4.subhead").textContent())[1]);
  assert.equal(csv.length - 1, rows, "every buffer live at the peak");
  const header = csvFields(csv[0]);
  const largest = csv.slice(1).map(csvFields).find((row) => row[0] === bySize[0].name);
  assert.ok(largest, `${bySize[0].name} is in the CSV`);
  assert.equal(largest[header.indexOf("shape")], bySize[0].shapeString);
  assert.equal(Number(largest[header.indexOf("size_bytes")]), bySize[0].size, "CSV sizes are exact bytes");
  assert.equal(Number(largest[header.indexOf("offset_bytes")]), indefinite + bySize[0].offset, "and the band's offset");
});

test("the canvas is keyboard-focusable and labelled; no script error", async () => {
  const canvas = page.locator(".timeline-canvas");
  assert.equal(await canvas.getAttribute("tabindex"), "0");
  assert.ok((await canvas.getAttribute("aria-label")).includes("jit_adam_step"));
  assert.deepEqual(pageErrors, []);
});
