// Issue 29, "the first thing said must fit the case", as the page shows it,
// on real inputs dropped as a user drops them:
// - a lone JAX device memory profile (corpus, JAX-DIPS on one GPU) asks for
//   the device, and the picker is there; picking one answers;
// - the 8-device TPU profile names the 64 MiB array held on every device,
//   with its line;
// - a snapshot without an OOM leads with its peak; "fragmentation" names one
//   number of its state table;
// - words: "1 device", "module analyses", a series of profiles headed by the
//   profiles' names, facts in words (no "module_peak", no "false");
// - the compiler's early abort is a requirement, with no absurd percentage;
// - the error and the log of one run are one OOM seen in two files.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { corpusDir, dropFiles, openExamplePage } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.join(ROOT, "dist");
const FIXTURES = path.join(ROOT, "fixtures");
const CORPUS = corpusDir();
const TIMEOUT = 60_000;

let opened;
let page;

before(async () => {
  opened = await openExamplePage(DIST, TIMEOUT);
  page = opened.page;
});

after(async () => {
  await opened?.close();
});

/** Drops files and waits until the answer is one that names `expect`. */
async function dropAndWait(files, expect) {
  await dropFiles(page, files);
  await page.waitForFunction(
    (text) => [...document.querySelectorAll(".verdict-answer")].some((e) => e.textContent.includes(text)),
    expect,
    { timeout: TIMEOUT },
  );
  return (await page.locator(".verdict-answer").first().textContent()).trim();
}

const file = (p) => ({ name: path.basename(p), path: p });

test("a lone JAX profile that asks for the device has the picker, and the pick answers", async () => {
  const prof = path.join(CORPUS, "runtime/JAX-DIPS__JAX-DIPS__memory.prof");
  const answer = await dropAndWait([file(prof)], "pick the device");
  assert.ok(answer.includes("1.30 GiB"), answer);
  const picker = page.locator("#device-picker");
  await picker.waitFor({ timeout: TIMEOUT });
  await picker.selectOption("TPU v5e");
  await page.waitForFunction(() => document.querySelector(".verdict-answer")?.textContent.includes("It fits on TPU v5e"), null, { timeout: TIMEOUT });
  // One device, said in the singular.
  const profile = await page.locator('[data-testid="device-memory-profile"] p').first().textContent();
  assert.ok(profile.includes("on 1 device;"), profile);
});

test("the 8-device profile names the array replicated on every device, with its line", async () => {
  const prof = path.join(CORPUS, "runtime/sholtodouglas__scalingExperiments__memory.prof@664e8b17");
  const answer = await dropAndWait([file(prof)], "on each of the 8 devices");
  assert.ok(answer.includes("one array of 64.00 MiB from <module> /tmp/ipykernel_35137/489185142.py:15"), answer);
  assert.ok(answer.includes("replicated"), answer);
});

test("a snapshot without an OOM leads with its peak, and fragmentation is one number", async () => {
  const snap = path.join(
    CORPUS,
    "snapshots/NiuHuangxiaozi__assignment2-systems__cs336_systems__profile_memory__forward_and_backward_memory_snapshot_200.pickle",
  );
  const answer = await dropAndWait([file(snap)], "peak allocated");
  assert.ok(answer.startsWith("No out-of-memory error; the memory snapshot's peak allocated (device 0) is 1.15 GiB"), answer);
  assert.ok(answer.includes("softmax.py:14"), answer);
  const rows = await page.locator('[data-testid="snapshot-state"] tbody td:first-child').allTextContents();
  assert.equal(rows.filter((r) => /fragmentation/i.test(r)).length, 1, rows.join(" | "));
  assert.ok(rows.some((r) => r.startsWith("Fragmentation: free blocks stranded between live ones")), rows.join(" | "));
});

test("a series of profiles is headed by the profiles' names", async () => {
  const leak = path.join(FIXTURES, "jax-memory-profiles/leak");
  const names = fs.readdirSync(leak).filter((n) => n.endsWith(".prof")).sort();
  await dropAndWait(names.map((n) => file(path.join(leak, n))), "160 allocations");
  const heads = await page.locator('[data-testid="device-memory-series"] thead th').allTextContents();
  assert.deepEqual(heads, ["Created at", ...names, "Growth"]);
});

test("several modules are analyses, and facts read as words", async () => {
  const dir = path.join(FIXTURES, "oom-single-buffer");
  const files = fs.readdirSync(dir).filter((n) => !n.endsWith(".json")).map((n) => file(path.join(dir, n)));
  await dropAndWait(files, "ran out at compile time");
  const body = await page.locator("body").textContent();
  assert.ok(!body.includes("analysises"), "no 'analysises'");
  assert.match(body, /\d+ module analyses/);
  const facts = await page.locator(".tree-node .fact").allTextContents();
  assert.ok(facts.length > 0);
  for (const f of facts) {
    assert.ok(!/module_peak|log_listing|\bfalse\b|\btrue\b/.test(f), `a raw fact: ${f}`);
  }
  assert.ok(facts.some((f) => f.includes("every buffer live at the peak")), facts.join(" | "));
  const compiler = await page.locator('[data-field="compiler_peak"]').first().textContent();
  assert.ok(compiler.includes("live-range dump"), compiler);
});

test("the compiler's early abort is a requirement, with no absurd percentage", async () => {
  const log = path.join(FIXTURES, "old-libtpu-oom-absurd/compile.log");
  const answer = await dropAndWait([file(log)], "impossible requirement");
  assert.ok(answer.includes("16.00 PiB"), answer);
  assert.equal(await page.locator('.verdict [data-field="used"]').count(), 0, "'requires' is not 'used'");
  const requires = await page.locator('.verdict [data-field="requires"]').textContent();
  assert.ok(requires.includes("impossible requirement"), requires);
  const verdict = await page.locator(".verdict").textContent();
  for (const m of verdict.matchAll(/([\d,.]+)%/g)) {
    assert.ok(Number(m[1].replace(/,/g, "")) <= 1000, `a percentage that means nothing: ${m[0]}`);
  }
});

test("the error and the log of one run are one OOM seen in two files", async () => {
  const logPath = path.join(FIXTURES, "oom-single-buffer/compile.log");
  const log = fs.readFileSync(logPath, "utf8");
  const error = log.split("\n").find((l) => l.startsWith("ERR: RESOURCE_EXHAUSTED: E1000"));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "oomscope-same-oom-"));
  fs.writeFileSync(path.join(tmp, "error.txt"), error + "\n");
  await dropAndWait([file(path.join(tmp, "error.txt")), file(logPath)], "ran out at compile time");
  const where = await page.locator(".verdict-where").allTextContents();
  assert.ok(where.some((w) => w.includes("the same out-of-memory error is also in error.txt:1")), where.join(" | "));
  assert.equal(await page.locator(".other-events").count(), 0, "no second OOM");
  fs.rmSync(tmp, { recursive: true });
});
