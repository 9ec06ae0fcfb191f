// The answer first (issue 20), in the browser, on real inputs: a run that
// fits, a padding-dominated program, a lone HloProto with a device picked
// (and the pick carried by a link; Copy link's notice does not squeeze the
// header), a step log, and a PyTorch fragmentation message.
//
// The page is checked against the analyzer's own report of the same files:
// the CLI (`oomscope analyze --json [--device NAME]`, the code the worker
// runs) gives the headline's node, text, estimate and severity; nothing is
// copied from the screen into the test.
//
// Inputs: fixtures made by tools/fixtures (padding-zoo-v5e, pair-batch-oom,
// the corpus dump new-libtpu-fits), real posted logs kept with their source
// in analyzer/crates/*/tests/samples/.

import { test, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { corpusDir, dropFiles, exampleSuite } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.join(ROOT, "dist");
const OUT = path.join(HERE, "out");
const CORPUS = corpusDir();
const FIXTURES = path.join(ROOT, "fixtures");
const LOG_SAMPLES = path.join(ROOT, "analyzer/crates/logs/tests/samples");
const STEP_SAMPLES = path.join(ROOT, "analyzer/crates/steps/tests/samples");
const TIMEOUT = 60_000;

const opened = exampleSuite(TIMEOUT, { clipboard: true });
let page;
// (After the suite's own `before` has opened the page.)
beforeEach(() => {
  page = opened.page;
});

/** The analyzer's own report of `paths` (the CLI runs the worker's code). */
function analyze(paths, device) {
  const args = ["run", "-q", "-p", "oomscope-analyzer", "--", "analyze", "--json", ...paths];
  if (device) args.push("--device", device);
  const out = execFileSync("cargo", args, { cwd: ROOT, encoding: "utf8", maxBuffer: 1 << 28 });
  return JSON.parse(out);
}

/** Every file of a fixture folder, as a user drops the folder's contents. */
function folderFiles(dir) {
  return fs
    .readdirSync(dir)
    .filter((n) => fs.statSync(path.join(dir, n)).isFile())
    .map((name) => ({ name, path: path.join(dir, name) }));
}

/** Drops `files`; the example makes way (each test then waits for its own headline). */
async function show(files) {
  await dropFiles(page, files);
  await page.locator(".example-banner").waitFor({ state: "detached", timeout: TIMEOUT });
}

/** The page's headline equals the analyzer's: node, words, estimate, severity. */
async function expectHeadline(headline, label) {
  const shown = page.locator(`.verdict-headline[data-node="${headline.node}"]`).first();
  await shown.waitFor({ timeout: TIMEOUT }).catch(async (e) => {
    const now = await page.locator(".verdict-headline").first().getAttribute("data-node").catch(() => "none");
    throw new Error(`${label}: the page heads with ${now}, the analyzer with ${headline.node}: ${e.message}`);
  });
  assert.equal((await shown.locator(".verdict-answer").textContent()).trim(), headline.text, label);
  assert.equal(await shown.getAttribute("data-severity"), headline.severity, label);
  const estimate = shown.locator('[data-field="headline-estimate"] .bytes');
  if (headline.estimate_bytes === undefined) {
    assert.equal(await estimate.count(), 0, label);
  } else {
    assert.equal(Number(await estimate.getAttribute("data-bytes")), headline.estimate_bytes, label);
  }
  return shown;
}

async function nothingDescribed() {
  return page.getByText("Nothing in these inputs describes memory use").count();
}

test("a run that fits: its headroom, not red, and no device asked for", async () => {
  // torchtitan's log prints the device's capacity: the limit is known.
  const log = path.join(STEP_SAMPLES, "torchtitan_issue1232.log");
  const report = analyze([log]);
  const h = report.diagnosis.headline;
  assert.equal(h.node, "verdict.fits", h.text);
  await show([{ name: path.basename(log), path: log }]);
  await expectHeadline(h, "fit");
  assert.notEqual(h.severity, "failure");
  const series = report.step_series.find((s) => s.limit_bytes);
  const peak = Math.max(...report.step_series.flatMap((s) => s.points.map((p) => p.bytes)));
  assert.equal(h.estimate_bytes, series.limit_bytes - peak, "the headroom is the limit minus the peak");
  assert.equal(await page.locator("#device-picker").count(), 0, "the log gives the limit");
  assert.equal(await nothingDescribed(), 0);
  assert.deepEqual(opened.pageErrors, []);
  assert.deepEqual(opened.cspViolations, []);
});

test("a padding-dominated program says so first, with the padding bytes", async () => {
  const dir = path.join(FIXTURES, "padding-zoo-v5e");
  const report = analyze([dir]);
  const h = report.diagnosis.headline;
  assert.equal(h.node, "verdict.padding", h.text);
  await show(folderFiles(dir));
  await expectHeadline(h, "padding");
  const module = report.modules.filter((m) => m.memory_space === 0).sort((a, b) => b.peak_bytes - a.peak_bytes)[0];
  assert.equal(h.estimate_bytes, module.padding.peak_padding_bytes);
  assert.ok(4 * h.estimate_bytes >= module.peak_bytes, "padding is at least a quarter of the peak");
  assert.equal(h.severity, "warning");
  await page.screenshot({ path: path.join(OUT, "answer-padding.png") });
  assert.deepEqual(opened.pageErrors, []);
  assert.deepEqual(opened.cspViolations, []);
});

test("a lone HloProto: pick the device, see the verdict and the tree's branch, and the link keeps the pick", async () => {
  // The corpus program that fits on v5e, as its HloProto alone.
  const fits = fs.readdirSync(path.join(CORPUS, "xla-runs/new-libtpu-fits")).find((n) => n.endsWith(".hlo.pb"));
  const fitsPath = path.join(CORPUS, "xla-runs/new-libtpu-fits", fits);
  const before = analyze([fitsPath]);
  assert.equal(before.diagnosis.headline.node, "verdict.no_limit");
  await show([{ name: fits, path: fitsPath }]);
  await expectHeadline(before.diagnosis.headline, "no limit");
  const picker = page.locator("#device-picker");
  await picker.waitFor({ timeout: TIMEOUT });

  await picker.selectOption("TPU v5e");
  const onV5e = analyze([fitsPath], "TPU v5e").diagnosis.headline;
  assert.equal(onV5e.node, "verdict.fits", onV5e.text);
  await expectHeadline(onV5e, "fits on v5e");
  assert.ok(onV5e.text.includes("on TPU v5e"), onV5e.text);

  // An HloProto that does not fit on v5e (the batch pair's OOM side): the
  // compile tree, with its remedy, opened on the branch.
  const dir = path.join(FIXTURES, "pair-batch-oom/full");
  const big = fs.readdirSync(dir).find((n) => n.endsWith(".hlo.pb"));
  const bigPath = path.join(dir, big);
  await show([{ name: big, path: bigPath }]);
  await page.locator(".verdict-headline[data-node='verdict.no_limit']").waitFor({ timeout: TIMEOUT });
  await page.locator("#device-picker").selectOption("TPU v5e");
  const over = analyze([bigPath], "TPU v5e").diagnosis;
  assert.equal(over.tree, "compile_hbm_oom");
  assert.equal(over.headline.severity, "failure");
  assert.ok(over.headline.text.startsWith("HBM will not fit on TPU v5e"), over.headline.text);
  await expectHeadline(over.headline, "over on v5e");
  const leaf = over.path[over.path.length - 1];
  const branch = page.locator(`#diagnosis li.tree-node[data-node="${leaf}"] > details`);
  assert.equal(await branch.getAttribute("open"), "", `the tree opens ${leaf}`);
  const leafNode = over.nodes.find((n) => n.id === leaf);
  assert.equal((await branch.locator(".node-reason").first().textContent()).trim(), leafNode.reason);

  // The link carries the pick: opened elsewhere, the same verdict and the device picked.
  const tagline = async () => page.locator(".tagline").evaluate((e) => e.getBoundingClientRect().width);
  const taglineBefore = await tagline();
  await page.locator("#copy-link").dispatchEvent("click");
  await page.locator('.share-status[data-copied="true"]').waitFor({ timeout: TIMEOUT });
  // What Copy link says takes a row of its own: the header is not squeezed.
  assert.equal(await tagline(), taglineBefore, "the tagline keeps its width");
  const [brandBottom, noticeTop] = await page.evaluate(() => [
    document.querySelector(".brand").getBoundingClientRect().bottom,
    document.querySelector(".share-notice").getBoundingClientRect().top,
  ]);
  assert.ok(noticeTop >= brandBottom, `the notice (${noticeTop}px) is below the header row (${brandBottom}px)`);
  const link = await page.locator("#share-link").inputValue();
  const other = await page.context().browser().newContext({ viewport: { width: 1280, height: 900 } });
  const receiver = await other.newPage();
  await receiver.goto(link, { timeout: TIMEOUT });
  const carried = receiver.locator(`.verdict-headline[data-node="${over.headline.node}"] .verdict-answer`);
  await carried.waitFor({ timeout: TIMEOUT });
  assert.equal((await carried.textContent()).trim(), over.headline.text);
  assert.equal(await receiver.locator("#device-picker").inputValue(), "TPU v5e");
  await other.close();
  assert.deepEqual(opened.pageErrors, []);
  assert.deepEqual(opened.cspViolations, []);
});

test("a step log: growth in words, the node open, no module section, and the step it runs out on a picked device", async () => {
  // torchtune's posted log: reserved memory grows, no capacity printed.
  const log = path.join(STEP_SAMPLES, "torchtune_pr2406.log");
  const report = analyze([log]);
  const h = report.diagnosis.headline;
  assert.equal(h.node, "runtime.steady_growth", h.text);
  await show([{ name: path.basename(log), path: log }]);
  await expectHeadline(h, "growth");
  assert.equal(await nothingDescribed(), 0);
  // The tree opens its selected node; no XLA dump is asked for.
  const node = page.locator(`#diagnosis li.tree-node[data-node="${h.node}"] > details`);
  assert.equal(await node.getAttribute("open"), "");
  assert.equal(await page.locator("#modules").count(), 0, "no module section for a step log");

  const device = "NVIDIA H200 141GB";
  await page.locator("#device-picker").selectOption(device);
  const picked = analyze([log], device).diagnosis.headline;
  assert.ok(new RegExp(`the limit of ${device} \\([\\d.]+ GiB\\) is reached at step \\d+`).test(picked.text), picked.text);
  await expectHeadline(picked, "growth on H200");
  await page.screenshot({ path: path.join(OUT, "answer-steps.png") });
  assert.deepEqual(opened.pageErrors, []);
  assert.deepEqual(opened.cspViolations, []);
});

test("a PyTorch fragmentation message: torch.fragmentation with its numbers and expandable_segments", async () => {
  const log = path.join(LOG_SAMPLES, "torch_reserved_maddog11.txt");
  const report = analyze([log]);
  const h = report.diagnosis.headline;
  assert.equal(h.node, "torch.fragmentation", h.text);
  assert.ok(h.text.includes("expandable_segments"), h.text);
  await show([{ name: path.basename(log), path: log }]);
  await expectHeadline(h, "fragmentation");
  const event = report.oom_events[0];
  const frag = report.diagnosis.nodes.find((n) => n.id === "torch.fragmentation");
  const node = page.locator('#diagnosis li.tree-node[data-node="torch.fragmentation"] > details');
  assert.equal(await node.getAttribute("open"), "");
  assert.equal((await node.locator(".node-reason").first().textContent()).trim(), frag.reason);
  // The reason and the verdict carry the message's own numbers.
  assert.equal(Number(await page.locator('.verdict [data-field="requested"] .bytes').getAttribute("data-bytes")), event.requested_bytes);
  // Every number the message states is on the page, not only in the report.
  const stated = { allocated: event.allocated_bytes, reserved: event.reserved_bytes, free: event.free_bytes };
  for (const [key, value] of Object.entries(event.extra ?? {})) if (key.endsWith("_bytes")) stated[key] = value;
  for (const [field, value] of Object.entries(stated)) {
    assert.ok(value !== undefined, `${field}: the message states it`);
    assert.equal(Number(await page.locator(`.verdict [data-field="${field}"] .bytes`).getAttribute("data-bytes")), value, field);
  }
  assert.ok(frag.reason.includes("expandable_segments") || frag.actions.some((a) => a.text.includes("expandable_segments")));
  assert.equal(await page.locator("#modules").count(), 0, "no XLA dump asked for a CUDA message");
  await page.screenshot({ path: path.join(OUT, "answer-fragmentation.png") });
  assert.deepEqual(opened.pageErrors, []);
  assert.deepEqual(opened.cspViolations, []);
});

test("the tree's answer under the verdict is the remedy the headline names", async () => {
  // A TPU compile whose replay chose bfloat16 where the estimates chose
  // jax.checkpoint, and logs of two failures (a path through each): the
  // box under the verdict showed the tree's other answer.
  for (const dir of ["oom-aggregate", "ranks-logs"]) {
    const files = folderFiles(path.join(FIXTURES, dir));
    const report = analyze(files.map((f) => f.path));
    const h = report.diagnosis.headline;
    assert.ok(report.diagnosis.path.includes(h.node), `${dir}: ${h.node} on ${report.diagnosis.path}`);
    await show(files);
    await expectHeadline(h, dir);
    const leaf = page.locator(".verdict-leaf").first();
    assert.equal(await leaf.getAttribute("data-node"), h.node, dir);
    const node = report.diagnosis.nodes.find((n) => n.id === h.node);
    assert.ok((await leaf.textContent()).includes(node.reason), `${dir}: ${node.reason}`);
    if (dir === "oom-aggregate") assert.ok(node.reason.startsWith("Replayed on the program"), node.reason);
  }
  assert.deepEqual(opened.pageErrors, []);
});
