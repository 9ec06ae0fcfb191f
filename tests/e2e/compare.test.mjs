// Comparing two runs in the browser (issue 18), on real fixture pairs:
// - fixtures/pair-dtype-oom (the same JAX train step compiled for TPU in
//   f32, which ran out of memory, and in bf16): its two folders are given
//   as A and B through "Compare two runs"; the page's peaks and difference
//   must equal XProf's peaks for the two HloProtos (pair.json's
//   `xprof_peak_heap_mib`), the changes must sum to the difference, and the
//   first named change must be the one the pair differs by (dtype);
// - the JSON and CSV exports hold the same numbers; "Copy link" makes a
//   `#c=` link that, opened in a fresh browser context, shows the same
//   comparison;
// - an unrelated pair (a transformer's folder against an MLP's HloProto
//   dropped on target B) says "no module in common" and still shows both
//   sides' peaks, each equal to that program's own XProf peak;
// - two real JAX step logs (fixtures/steps: a steady loop, and one keeping
//   2 MiB per step) dropped as A and B: growth per step A vs B, B's within
//   10% of the true growth the log's header states;
// - two real JAX device memory profiles of a leaking loop (steps 20 and 60):
//   peaks equal to an independent reading of the pprof files
//   (fixtures/jax-memory-profiles/expected.json), and the stacks that grew;
// - a side that cannot be loaded is named, the other side still shown;
// - a damaged `#c=` link gives a clear error and leaves the page usable.
// Any request to another origin fails the run.
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
const PAIR = path.join(ROOT, "fixtures/pair-dtype-oom");
const TIMEOUT = 90_000;
const MIB = 2 ** 20;

let server;
let origin;
let browser;
let page;
const pageErrors = [];
const foreignRequests = [];
// The numbers the first page showed, for the link test.
let shown;

const spec = JSON.parse(fs.readFileSync(path.join(PAIR, "pair.json"), "utf8"));

/** XProf's peak of one fixture folder's module, from its memory viewer oracle. */
function xprofPeakBytes(folder) {
  const oracle = fs.readdirSync(folder).find((f) => f.endsWith(".memory_viewer.json"));
  return Math.round(JSON.parse(fs.readFileSync(path.join(folder, oracle), "utf8")).peakHeapMib * MIB);
}

async function freshPage() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin });
  context.on("request", (request) => {
    const url = request.url();
    if (!url.startsWith("data:") && !url.startsWith("blob:") && new URL(url).origin !== origin) foreignRequests.push(url);
  });
  const p = await context.newPage();
  p.on("pageerror", (error) => pageErrors.push(String(error)));
  p.on("console", (m) => m.type() === "error" && console.log(`# console error: ${m.text().slice(0, 4000)}`));
  return p;
}

async function bytesAt(locator) {
  return Number(await locator.first().getAttribute("data-bytes", { timeout: TIMEOUT }));
}

/** What a reader takes from the HBM module's card. */
async function moduleNumbers(p) {
  const card = p.locator('.compare-module[data-memory-space="0"]');
  await card.waitFor({ timeout: TIMEOUT });
  const changes = [];
  for (const row of await card.locator("tr.compare-change").all()) {
    changes.push({ kind: await row.getAttribute("data-kind"), bytes: await bytesAt(row.locator(".bytes")), text: (await row.locator(".change-text").textContent()).trim() });
  }
  return {
    labels: [(await p.locator(".compare-label-a").textContent()).trim(), (await p.locator(".compare-label-b").textContent()).trim()],
    peakA: await bytesAt(card.locator('[data-field="peak-a"] .bytes')),
    peakB: await bytesAt(card.locator('[data-field="peak-b"] .bytes')),
    difference: await bytesAt(card.locator('[data-field="difference"] .bytes')),
    changes,
  };
}

async function download(button) {
  const [file] = await Promise.all([page.waitForEvent("download", { timeout: TIMEOUT }), button.click()]);
  const body = fs.readFileSync(await file.path(), "utf8");
  fs.writeFileSync(path.join(OUT, file.suggestedFilename()), body);
  return body;
}

before(async () => {
  assert.ok(fs.existsSync(path.join(DIST, "index.html")), "dist/index.html missing: run `trunk build --release` first");
  fs.mkdirSync(OUT, { recursive: true });
  ({ server, origin } = await serveDist(DIST));
  browser = await launchChromium();
  page = await freshPage();
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.locator(".verdict").waitFor({ timeout: TIMEOUT });
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => server?.close(resolve));
  assert.deepEqual(foreignRequests, [], "requests left the page's origin");
  assert.deepEqual(pageErrors, [], "the page threw");
});

test("two folders given as A and B: the difference is XProf's, cut into the named change", async () => {
  await page.locator("#compare-open").click();
  const [before, after] = [spec.before, spec.after];
  await page.setInputFiles("#compare-a-folder", path.join(PAIR, before));
  await page.setInputFiles("#compare-b-folder", path.join(PAIR, after));
  // The labels default to the folder names.
  assert.equal(await page.locator("#compare-a-label").inputValue(), before);
  assert.equal(await page.locator("#compare-b-label").inputValue(), after);
  await page.locator("#compare-run").click();
  await page.locator("#comparison").waitFor({ timeout: TIMEOUT });
  await page.screenshot({ path: path.join(OUT, "compare.png"), fullPage: true });

  shown = await moduleNumbers(page);
  const peak = (variant) => Math.round(spec.variants[variant].xprof_peak_heap_mib * MIB);
  assert.deepEqual(shown.labels, [before, after]);
  assert.equal(shown.peakA, peak(before), "peak A is XProf's");
  assert.equal(shown.peakB, peak(after), "peak B is XProf's");
  assert.equal(shown.difference, peak(after) - peak(before));
  assert.equal(shown.difference, -Math.round(spec.peak_difference_mib * MIB));
  assert.equal(shown.changes.reduce((s, c) => s + c.bytes, 0), shown.difference, "the changes sum to the difference");
  // The pair differs by dtype ("float32 vs bfloat16"): the largest change names it, in words.
  assert.match(spec.differs, /^dtype/);
  assert.equal(shown.changes[0].kind, "dtype");
  assert.match(shown.changes[0].text, /bf16/);
  // The f32 side ran out of memory: its headline is on its card.
  assert.ok((await page.locator('.compare-side[data-side="a"] .compare-headline').textContent()).length > 10);
  // Buffers ranked by the size of their change at the peak.
  const diffs = [];
  for (const cell of await page.locator('.compare-module[data-memory-space="0"] tr.compare-buffer td:nth-child(8) .bytes').all()) {
    diffs.push(Math.abs(Number(await cell.getAttribute("data-bytes"))));
  }
  assert.ok(diffs.length > 0);
  assert.deepEqual(diffs, [...diffs].sort((x, y) => y - x));
});

test("the exports hold the page's numbers: JSON as `oomscope compare --json`, CSV of the buffer changes", async () => {
  const json = JSON.parse(await download(page.locator("#compare-json")));
  assert.ok(json.a && json.b, "both reports are in the JSON");
  const hbm = json.comparison.modules.find((m) => m.memory_space === 0);
  assert.equal(hbm.peak_bytes_b - hbm.peak_bytes_a, shown.difference);
  assert.deepEqual(hbm.changes.map((c) => [c.kind, c.bytes]), shown.changes.map((c) => [c.kind, c.bytes]));
  assert.equal(typeof hbm.explained_bytes, "number");

  const rows = csvRows(await download(page.locator("#compare-csv")));
  const header = rows.shift();
  const at = (name) => header.indexOf(name);
  assert.ok(at("difference_bytes") >= 0 && at("name_a") >= 0, header.join(","));
  const listed = json.comparison.modules.flatMap((m) => m.buffers.map((b) => [m.name, b.kind, b.name_a, b.name_b, String(b.difference_bytes)]));
  assert.deepEqual(rows.map((r) => [r[at("module")], r[at("kind")], r[at("name_a")], r[at("name_b")], r[at("difference_bytes")]]), listed);
});

test("Copy link makes a #c= link that opens the same comparison in a fresh browser", async () => {
  await page.locator("#copy-link").click();
  const status = page.locator(".share-status");
  await status.waitFor({ timeout: TIMEOUT });
  const link = await page.locator("#share-link").inputValue();
  assert.ok(link.startsWith(`${origin}/#c=1.`), link);
  assert.ok(link.length <= 4096 + origin.length + 2, `${link.length} characters`);
  if ((await status.getAttribute("data-copied")) === "true") {
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), link);
  }

  const opened = await freshPage();
  await opened.goto(link, { timeout: TIMEOUT });
  await opened.locator("#comparison").waitFor({ timeout: TIMEOUT });
  assert.deepEqual(await moduleNumbers(opened), shown);
  assert.ok(await opened.locator(".shared-banner").isVisible(), "marked as shared");
  await opened.screenshot({ path: path.join(OUT, "compare-link.png"), fullPage: true });

  // A damaged link: a clear error, and the page still works.
  await opened.goto(`${origin}/#${new URL(link).hash.slice(1, -12)}`, { timeout: TIMEOUT });
  await opened.reload();
  const notice = opened.locator(".notice");
  await notice.waitFor({ timeout: TIMEOUT });
  assert.match(await notice.textContent(), /damaged or incomplete/);
  await opened.close();
});

test("unrelated programs: no module in common, both sides still shown with their own peaks", async () => {
  const transformer = path.join(ROOT, "fixtures/transformer-step");
  const mlp = path.join(ROOT, "fixtures/fits-mlp");
  const hlo = fs.readdirSync(mlp).find((f) => f.endsWith(".hlo.pb"));
  await page.locator("#compare-open").click();
  await page.setInputFiles("#compare-a-folder", transformer);
  // B is dropped on its target (a drop there is B's, not a new report).
  const bytes = fs.readFileSync(path.join(mlp, hlo)).toString("base64");
  await page.locator("#compare-b").evaluate((target, [name, bytes]) => {
    const transfer = new DataTransfer();
    transfer.items.add(new File([Uint8Array.from(atob(bytes), (c) => c.charCodeAt(0))], name));
    for (const type of ["dragenter", "dragover", "drop"]) {
      target.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }));
    }
  }, [hlo, bytes]);
  await page.locator('#compare-b .compare-given[data-count="1"]').waitFor({ timeout: TIMEOUT });
  assert.equal(await page.locator("#compare-b-label").inputValue(), hlo);
  // The page-wide drop did not take it: the comparison on screen stays.
  await page.waitForTimeout(1000);
  assert.equal(await page.locator("#comparison").count(), 1, "a drop on B replaced the comparison");
  assert.equal(await page.locator("section.progress").count(), 0, "a drop on B started an analysis");
  await page.locator("#compare-run").click();
  const note = page.locator('.compare-note[data-kind="no_module_in_common"]');
  await note.waitFor({ timeout: TIMEOUT });
  assert.match(await note.textContent(), /no module in common/i);
  assert.equal(await page.locator(".compare-module").count(), 0);
  for (const [side, folder] of [["a", transformer], ["b", mlp]]) {
    const hbm = page.locator(`.compare-side[data-side="${side}"] .compare-side-peak[data-memory-space="0"]`);
    assert.equal(await bytesAt(hbm.locator(".bytes")), xprofPeakBytes(folder), `side ${side}'s peak is its XProf peak`);
  }
  await page.screenshot({ path: path.join(OUT, "compare-unrelated.png"), fullPage: true });
});

test("a side that cannot be loaded is named, and the other side is still shown", async () => {
  const f32 = path.join(PAIR, spec.before);
  await page.locator("#compare-open").click();
  await page.setInputFiles("#compare-a-folder", f32);
  // Not a protocol buffer: a field header whose length runs past the end.
  await page.setInputFiles("#compare-b-files", { name: "broken.hlo.pb", mimeType: "application/octet-stream", buffer: Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2]) });
  await page.locator("#compare-b-label").fill("after");
  await page.locator("#compare-run").click();
  const note = page.locator('.compare-note[data-kind="side_failed"]');
  await note.waitFor({ timeout: TIMEOUT });
  assert.match(await note.textContent(), /^after could not be loaded \(.*broken\.hlo\.pb/);
  assert.equal(await page.locator('.compare-side[data-side="b"]').getAttribute("data-failed"), "true");
  assert.match(await page.locator('.compare-side[data-side="b"] .compare-side-errors').textContent(), /broken\.hlo\.pb/);
  const a = page.locator('.compare-side[data-side="a"]');
  assert.equal(await a.getAttribute("data-failed"), "false");
  assert.equal(await bytesAt(a.locator('.compare-side-peak[data-memory-space="0"] .bytes')), xprofPeakBytes(f32));
});

test("step logs: growth per step A vs B, B's equal to the leak the log states", async () => {
  const steps = path.join(ROOT, "fixtures/steps");
  const leak = fs.readFileSync(path.join(steps, "jax_cpu_leak.log"), "utf8");
  const truth = Number(/^# true_growth_bytes_per_step: (\d+)/m.exec(leak)[1]);
  await page.locator("#compare-open").click();
  await page.setInputFiles("#compare-a-files", path.join(steps, "jax_cpu_steady.log"));
  await page.setInputFiles("#compare-b-files", path.join(steps, "jax_cpu_leak.log"));
  await page.locator("#compare-run").click();
  const row = page.locator("tr.compare-series").first();
  await row.waitFor({ timeout: TIMEOUT });
  assert.deepEqual(
    [(await page.locator(".compare-label-a").textContent()).trim(), (await page.locator(".compare-label-b").textContent()).trim()],
    ["jax_cpu_steady.log", "jax_cpu_leak.log"],
  );
  const growthA = await bytesAt(row.locator('[data-field="growth-a"] .bytes'));
  const growthB = await bytesAt(row.locator('[data-field="growth-b"] .bytes'));
  assert.ok(Math.abs(growthB - truth) < 0.1 * truth, `B grows ${growthB} B/step, the log says ${truth}`);
  assert.ok(Math.abs(growthA) < 0.1 * truth, `A is steady: ${growthA} B/step`);
});

test("JAX device memory profiles: peaks as the pprof files hold them, and the stacks that grew", async () => {
  const dir = path.join(ROOT, "fixtures/jax-memory-profiles");
  const expected = JSON.parse(fs.readFileSync(path.join(dir, "expected.json"), "utf8"));
  const [a, b] = ["leak/memory_step_20.prof", "leak/memory_step_60.prof"];
  await page.locator("#compare-open").click();
  await page.setInputFiles("#compare-a-files", path.join(dir, a));
  await page.setInputFiles("#compare-b-files", path.join(dir, b));
  await page.locator("#compare-run").click();
  const card = page.locator(".compare-stacks").first();
  await card.waitFor({ timeout: TIMEOUT });
  const peakA = await bytesAt(card.locator('[data-field="peak-a"] .bytes'));
  const peakB = await bytesAt(card.locator('[data-field="peak-b"] .bytes'));
  assert.equal(peakA, expected[a].buffer_bytes);
  assert.equal(peakB, expected[b].buffer_bytes);
  assert.equal(await bytesAt(card.locator('[data-field="difference"] .bytes')), peakB - peakA);
  const kinds = await card.locator("tr.compare-stack").evaluateAll((rows) => rows.map((r) => r.dataset.kind));
  assert.ok(kinds.some((k) => k === "grew" || k === "appeared"), `stack changes: ${kinds}`);
});
