// Browser tests of the decision tree (app/src/views/diagnosis.rs): the
// nodes the data selects, and the links from the buffers a node cites to
// the timeline (which pins the buffer) and to the padding table (which
// selects its row), on real inputs:
// - the embedded example (fixtures/oom-single-buffer: one TPU compile OOM
//   with its XLA dump): two f32[32768,100003] temporaries, each over half of
//   the HBM limit, select large_allocations → sharding; the numbers checked
//   are the dump's own buffer assignment's;
// - corpus log 01 (a TPU compile OOM listing its 20 largest allocations):
//   the tree cites them by rank in the listing, and the padding link
//   selects the listed allocation.
//
// Environment: CHROMIUM (default /usr/bin/chromium), OOMSCOPE_CORPUS
// (default ../shared/corpus beside the repository).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { corpusDir, launchChromium, sectionAtTop, serveDist } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.join(ROOT, "dist");
const OUT = path.join(HERE, "out");
const EXAMPLE = path.join(ROOT, "fixtures/oom-single-buffer");
const CORPUS = corpusDir();
const TIMEOUT = 60_000;

let server;
let origin;
let browser;
let page;
const pageErrors = [];

/** The dump's buffer assignment: every value's name → its allocated size and shape. */
function assignedValues(dir) {
  const file = fs.readdirSync(dir, { recursive: true }).find((f) => String(f).endsWith("after_optimizations-buffer-assignment.txt"));
  assert.ok(file, `no buffer assignment under ${dir}`);
  const values = new Map();
  for (const line of fs.readFileSync(path.join(dir, String(file)), "utf8").split("\n")) {
    const m = /^\s*value: <\d+ (\S+) @\d+> \(size=(\d+),offset=\d+\): (.+)$/.exec(line);
    if (m) values.set(m[1], { size: Number(m[2]), shape: m[3].trim() });
  }
  return values;
}

before(async () => {
  assert.ok(fs.existsSync(path.join(DIST, "index.html")), "dist/index.html missing: run `trunk build --release` first");
  fs.mkdirSync(OUT, { recursive: true });
  ({ server, origin } = await serveDist(DIST));
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.locator(".example-banner").waitFor({ timeout: TIMEOUT });
  await page.locator("#modules .timeline-canvas").waitFor({ timeout: TIMEOUT });
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
});

test("the example's tree selects large allocations and cites the two buffers over half the limit", async () => {
  const current = await page.locator("#diagnosis .tree-node.current").evaluateAll((nodes) => nodes.map((n) => n.dataset.node));
  // The OpenXLA page's rule (issue 15 item 8): section 2 whenever an
  // allocation is over half the limit, then section 3 as well, in that order.
  assert.deepEqual(current.slice(0, 2), ["large_allocations", "large_allocations.sharding"]);
  assert.ok(current.slice(2).every((id) => id.startsWith("aggregate")), JSON.stringify(current));
  const rows = page.locator('#diagnosis [data-node="large_allocations"] > details table.cited-buffers tbody tr');
  assert.equal(await rows.count(), 2);
  const values = assignedValues(EXAMPLE);
  const limit = Number(await page.locator('.verdict [data-field="limit"] .bytes').first().getAttribute("data-bytes"));
  for (const row of await rows.all()) {
    const name = await row.getAttribute("data-buffer");
    const value = values.get(name);
    assert.ok(value, `${name} is a value of the dump's buffer assignment`);
    const size = Number(await row.locator(".bytes").getAttribute("data-bytes"));
    assert.equal(size, value.size, `${name}: the size is the compiler's`);
    assert.ok(size > limit / 2, `${name} is over half the limit`);
    assert.equal((await row.locator("td.shape").textContent()).trim(), value.shape);
    assert.equal(await row.locator('button[data-show="timeline"]').count(), 1, `${name} links to the timeline`);
    assert.equal(await row.locator('button[data-show="padding"]').count(), 1, `${name} links to the padding table`);
  }
  await page.locator("#diagnosis").screenshot({ path: path.join(OUT, "tree-example.png") });
});

test("a cited buffer's links pin it in the timeline and select it in the padding table", async () => {
  const row = page.locator('#diagnosis [data-node="large_allocations"] > details table.cited-buffers tbody tr').nth(1);
  const name = await row.getAttribute("data-buffer");

  await row.locator('button[data-show="timeline"]').click();
  await page.locator(`#modules .timeline-pinned[data-buffer="${name}"]`).waitFor({ timeout: TIMEOUT });
  await sectionAtTop(page, "modules");
  assert.equal(
    await page.locator("table.timeline-peak tr.selected").getAttribute("data-buffer"),
    name,
    "the timeline's peak table selects it too",
  );
  await page.screenshot({ path: path.join(OUT, "tree-to-timeline.png") });

  await page.locator("#diagnosis").scrollIntoViewIfNeeded();
  await row.locator('button[data-show="padding"]').click();
  const selected = page.locator(`#padding table.padding-table tbody tr.selected[data-key="${name}"]`);
  await selected.waitFor({ timeout: TIMEOUT });
  await sectionAtTop(page, "padding");
  assert.ok(Number(await selected.getAttribute("data-waste")) > 0, "the row shows its padding");
  await page.screenshot({ path: path.join(OUT, "tree-to-padding.png") });
});

test("a log's listed allocations are cited by rank and shown in the padding table", async () => {
  await page.setInputFiles("#file-input", path.join(CORPUS, "logs/01_tpu_compile_hbm.txt"));
  await page.locator(".verdict-where", { hasText: "01_tpu_compile_hbm.txt" }).waitFor({ timeout: TIMEOUT });
  const cited = page.locator("#diagnosis table.cited-buffers tbody tr");
  assert.ok((await cited.count()) > 0, "the tree cites listed allocations");
  // The first allocation the log lists: 512.00M of f32[4,128,128,9,18], 12.6x padded.
  const first = page.locator('#diagnosis table.cited-buffers tbody tr:has(td.shape:text-is("f32[4,128,128,9,18]{4,3,0,2,1:T(8,128)}"))').first();
  await first.locator('button[data-show="padding"]').click();
  const selected = page.locator("#padding table.padding-table tbody tr.selected");
  await selected.waitFor({ timeout: TIMEOUT });
  assert.equal((await selected.locator("td.shape").textContent()).trim(), "f32[4,128,128,9,18]{4,3,0,2,1:T(8,128)}");
  // 512.00M padded against 40.50M of data (the log's own figures, rounded).
  const waste = Number(await selected.getAttribute("data-waste"));
  assert.ok(Math.abs(waste - (512 - 40.5) * 2 ** 20) < 0.01 * 2 ** 20, `waste ${waste}`);
  // A log has no timeline: no link promises one.
  assert.equal(await page.locator('#diagnosis button[data-show="timeline"]').count(), 0);
});

test("long lists of cited buffers show three per reason and unfold on request", async () => {
  // pair-remat-oom: 58 buffers at the peak; the configuration step cites
  // f32 buffers, donatable parameters and batch-scaled buffers.
  await page.setInputFiles("#folder-input", path.join(ROOT, "fixtures/pair-remat-oom"));
  await page.locator(".verdict-where", { hasText: "pair-remat-oom" }).waitFor({ timeout: TIMEOUT });
  const config = page.locator('#diagnosis [data-node="aggregate.config"] > details');
  // Off the selected path (remat is the headline now), the node starts closed.
  if ((await config.getAttribute("open")) === null) await config.locator(":scope > summary").click();
  const rows = config.locator("table.cited-buffers tbody tr");
  const all = await rows.count();
  const shown = await rows.evaluateAll((trs) => trs.filter((tr) => tr.offsetParent !== null).map((tr) => tr.dataset.role));
  const perRole = shown.reduce((m, role) => m.set(role, (m.get(role) || 0) + 1), new Map());
  assert.ok(perRole.size >= 2 && [...perRole.values()].every((n) => n <= 3), JSON.stringify([...perRole]));
  assert.ok(all > shown.length, `${all} cited, ${shown.length} shown`);
  await config.locator("button.cites-more").click();
  assert.equal(await rows.evaluateAll((trs) => trs.filter((tr) => tr.offsetParent !== null).length), all);
});

test("no page error", () => {
  assert.deepEqual(pageErrors, []);
});
