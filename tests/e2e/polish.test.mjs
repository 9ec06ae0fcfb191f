// Details users met: CSV exports neutralise cells a spreadsheet would run
// as formulas (a link's strings come from whoever made the link), and the
// page fits a 390 px phone screen with no horizontal scrolling.
//
// Needs the trunk-built page in dist/ (OOMSCOPE_DIST) and Debian's
// Chromium, like the other browser tests.

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
const TIMEOUT = 60_000;

let server;
let origin;
let browser;
const pageErrors = [];

/** A report of one module whose buffers carry hostile names. */
function hostileReport(names) {
  const buffers = names.map((name, i) => ({
    id: i,
    name,
    shape: "f32[1024,1024]{1,0}",
    size_bytes: 4 * 1024 * 1024,
    unpadded_bytes: 4 * 1024 * 1024,
    start: i,
    end: 10,
    category: "temporary",
    op_name: "@op",
    source: "-model.py:1",
    opcode: "fusion",
    offset_bytes: i * 4 * 1024 * 1024,
  }));
  const heap = Array.from({ length: 11 }, (_, p) => buffers.filter((b) => b.start <= p && p <= b.end).length * 4 * 1024 * 1024);
  return {
    schema: 1,
    inputs: [{ name: "hostile.hlo.pb", kind: "hlo_proto", size_bytes: 0 }],
    oom_events: [],
    modules: [
      {
        name: "hostile",
        memory_space: 0,
        source_kind: "hlo_proto",
        input: "hostile.hlo.pb",
        peak_kind: "heap_simulator",
        peak_bytes: Math.max(...heap),
        peak_unpadded_bytes: Math.max(...heap),
        peak_position: 10,
        heap_bytes: heap,
        unpadded_heap_bytes: heap,
        peak_buffers: [],
        parameters_bytes: 0,
        maybe_live_out_bytes: 0,
        total_allocation_bytes: buffers.length * 4 * 1024 * 1024,
        buffers,
        instructions: Array.from({ length: 11 }, (_, p) => `op.${p}`),
      },
    ],
    step_series: [],
    diagnosis: { tree: "none", path: [], nodes: [] },
    errors: [],
  };
}

before(async () => {
  assert.ok(fs.existsSync(path.join(DIST, "index.html")), `${DIST}/index.html missing: run \`trunk build --release\` first`);
  fs.mkdirSync(OUT, { recursive: true });
  ({ server, origin } = await serveDist(DIST));
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
});

test("CSV exports neutralise cells starting with = + - @", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.locator(".verdict").waitFor({ timeout: TIMEOUT });
  const names = ['=HYPERLINK("http://example.invalid","x")', "+1+1", "-2+3", "@SUM(A1)", "plain.1"];
  const error = await page.evaluate((json) => window.__oomscope_load_report(json), JSON.stringify(hostileReport(names)));
  assert.equal(error, undefined);
  await page.locator(".timeline-canvas[data-x1]").waitFor({ timeout: TIMEOUT });
  // The names are shown as they are on the page…
  const listed = await page.locator("table.timeline-peak tbody tr[data-buffer]").evaluateAll((rows) => rows.map((r) => r.dataset.buffer));
  assert.deepEqual([...listed].sort(), [...names].sort());
  // …and exported as text a spreadsheet will not run.
  const [download] = await Promise.all([
    page.waitForEvent("download", { timeout: TIMEOUT }),
    page.locator(".timeline-toolbar button", { hasText: "CSV" }).click(),
  ]);
  const text = fs.readFileSync(await download.path(), "utf8");
  fs.writeFileSync(path.join(OUT, "hostile.peak-buffers.csv"), text);
  const lines = text.trim().split("\r\n").slice(1);
  assert.equal(lines.length, names.length);
  for (const line of lines) {
    // The first cell (quoted when it holds a comma or a quote).
    const first = line.startsWith('"') ? line.slice(1) : line;
    assert.ok(!/^[=+\-@]/.test(first), `cell not neutralised: ${line}`);
  }
  assert.ok(lines.some((l) => l.startsWith("\"'=HYPERLINK(")), text);
  assert.ok(lines.some((l) => l.startsWith("'+1+1,")), text);
  assert.ok(lines.some((l) => l.startsWith("plain.1,")), "other names are untouched");
  // The op and source columns too.
  assert.ok(lines.every((l) => l.includes(",'@op,") && l.includes(",'-model.py:1,")), text);
  await context.close();
});

test("the page fits a 390 px phone screen", async () => {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  const page = await context.newPage();
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.locator(".verdict").waitFor({ timeout: TIMEOUT });
  await page.locator("#padding").waitFor({ timeout: TIMEOUT });
  await page.waitForTimeout(300);
  const widths = await page.evaluate(() => ({
    page: document.documentElement.scrollWidth,
    body: document.body.scrollWidth,
    viewport: window.innerWidth,
    // Elements that stick out of the screen (not those inside their own
    // scrolling boxes).
    wide: [...document.querySelectorAll("body *")]
      .filter((e) => {
        const r = e.getBoundingClientRect();
        if (r.width === 0 || r.right <= window.innerWidth + 1) return false;
        for (let p = e.parentElement; p; p = p.parentElement) {
          const o = getComputedStyle(p).overflowX;
          if (o === "auto" || o === "scroll" || o === "hidden") return false;
        }
        return true;
      })
      .slice(0, 5)
      .map((e) => `${e.tagName.toLowerCase()}.${e.className} ${Math.round(e.getBoundingClientRect().right)}px`),
  }));
  await page.screenshot({ path: path.join(OUT, "phone-390.png"), fullPage: false });
  await page.locator("#padding").screenshot({ path: path.join(OUT, "phone-390-padding.png") });
  assert.deepEqual(widths.wide, [], `elements wider than the screen: ${widths.wide.join(", ")}`);
  assert.ok(widths.page <= widths.viewport, `the page is ${widths.page}px wide on a ${widths.viewport}px screen`);
  await context.close();
});

test("no page error", () => {
  assert.deepEqual(pageErrors, []);
});
