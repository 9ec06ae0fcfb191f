// Throughput and memory benchmark of the analysis of XProf profiles
// (`*.xplane.pb`) in headless Chromium. Not a test: it prints numbers.
//
//   node bench-xplane.mjs FILE.xplane.pb [FILE2 ...] [--timeout SECONDS] [--shots DIR] [--intent] [--stages]
//
// Grow a real profile to ~1 GB first with tools/bench/make_big_xplane.py.
// For each file, a fresh browser opens the built page (OOMSCOPE_DIST,
// default dist/ from `trunk build --release`), the file is chosen with the
// page's file input (Playwright hands Chromium the path; nothing is copied
// through the driver) and the wall time from the choice to the report shown
// (the file's row in the inputs table, progress gone) is measured.
//
// Memory is sampled every 100 ms while the analysis runs:
// - every Chromium process started by this script, from /proc/PID/status:
//   VmRSS (sampled) and VmHWM (the kernel's own peak, so nothing between
//   samples is missed). The analysis worker is a thread of the page's
//   renderer process, so its wasm memory counts there;
// - the page's JS heap (CDP Performance.getMetrics JSHeapUsedSize);
// - after the run, the worker's and the page's wasm linear memories (they
//   never shrink, so their sizes are their wasm peaks).
// A screenshot of each result page goes to --shots (default /tmp).
//
// The CPU time the Chromium processes used from the choice to the report
// (user + system, /proc/PID/stat) is printed too: the renderer's (the page
// and its analysis worker are threads of it) and all of them together. On a
// shared machine it varies less than the wall time.
//
// The page starts its analysis worker when the user shows intent (the
// pointer on the drop zone, on the way to "Choose files…"; a drag over the
// page), not on load. By default the file is chosen with no intent shown, so
// the time includes starting the worker (fetching and compiling its wasm).
// --intent first moves the pointer onto the drop zone and waits until the
// worker is up (as a file dialog or a drag gives it time to), then times
// the drop.
//
// --stages also prints when each stage began, in ms after the choice: the
// worker's messages (its progress stages, Ready, the report posted) are
// timed inside the worker by wrapping its postMessage, the page's first
// frame with the report by the loop below. A worker started by the drop is
// wrapped as soon as it appears (before its wasm is compiled, so before it
// can post anything).

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { cpuSecondsOf, descendants, kindOf, launchChromium, memorySampler, serveDist, takeOption } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.resolve(process.env.OOMSCOPE_DIST || path.join(ROOT, "dist"));
const SAMPLE_MS = 100;

const args = process.argv.slice(2);
const option = (name, fallback) => takeOption(args, name, fallback);
const TIMEOUT_MS = Number(option("--timeout", 900)) * 1000;
const SHOTS = option("--shots", "/tmp");
const INTENT = args.includes("--intent");
if (INTENT) args.splice(args.indexOf("--intent"), 1);
const STAGES = args.includes("--stages");
if (STAGES) args.splice(args.indexOf("--stages"), 1);

/**
 * Runs in the page before its scripts: records when each worker message
 * that carries a document (the report) arrives, and the page's long tasks
 * (over 50 ms: parsing the report, drawing it).
 */
function watchPage(input) {
  const marks = (window.__stages = []);
  const now = () => performance.timeOrigin + performance.now();
  // The moment the loop below waits for, seen from inside (the loop polls
  // every 100 ms, behind the page's long tasks), and the frame after it.
  let shown = false;
  new MutationObserver(() => {
    if (shown || document.querySelector("section.progress")) return;
    if (!document.querySelector(`table.inputs tr[data-input="${CSS.escape(input)}"]`)) return;
    shown = true;
    marks.push({ what: "page has report", at: now() });
    requestAnimationFrame(() => marks.push({ what: "next frame", at: now() }));
  }).observe(document, { childList: true, subtree: true });
  const Original = window.Worker;
  window.Worker = class extends Original {
    constructor(...args) {
      super(...args);
      // Added before the page sets onmessage, so it runs first.
      this.addEventListener("message", (e) => {
        if (Array.isArray(e.data)) marks.push({ what: "page gets report", at: now() });
      });
    }
  };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) marks.push({ what: `page long task (${Math.round(e.duration)} ms)`, at: performance.timeOrigin + e.startTime });
  }).observe({ type: "longtask", buffered: true });
}

/** Runs in the worker: records each message it posts (type, stage) with the epoch time. */
function wrapWorkerPost() {
  if (self.__stages) return;
  const marks = (self.__stages = [
    { what: "worker created", at: performance.timeOrigin },
    { what: "worker wrapped", at: performance.timeOrigin + performance.now() },
  ]);
  self.addEventListener("message", () => marks.push({ what: "job received", at: performance.timeOrigin + performance.now() }), { once: true });
  const post = self.postMessage.bind(self);
  let last = "";
  self.postMessage = (message, transfer) => {
    const at = performance.timeOrigin + performance.now();
    try {
      const text = typeof message === "string" ? message : Array.isArray(message) ? message[0] : null;
      const m = JSON.parse(text);
      const what = m.type === "progress" ? `stage ${m.stage}` : `posts ${m.type}`;
      if (what !== last) marks.push({ what, at });
      last = what;
    } catch {
      // Not ours to read.
    }
    return post(message, transfer);
  };
}
const FILES = args;
if (FILES.length === 0) {
  console.error("usage: node bench-xplane.mjs FILE.xplane.pb [FILE2 ...] [--timeout SECONDS] [--shots DIR] [--intent] [--stages]");
  process.exit(2);
}

const MiB = 2 ** 20;
const { server, origin } = await serveDist(DIST);

async function bench(file) {
  const name = path.basename(file);
  const size = fs.statSync(file).size;
  const browser = await launchChromium();
  try {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    if (STAGES) await page.addInitScript(watchPage, name);
    page.on("pageerror", (e) => console.error("page error:", String(e)));
    await page.goto(origin + "/");
    await page.locator(".verdict").waitFor({ timeout: 120_000 });
    const memory = await memorySampler(page);
    const { peaks } = memory;
    const sample = memory.sample;
    await sample();
    const before = new Map([...peaks].map(([pid, p]) => [pid, { ...p }]));

    let wrapped = null;
    if (STAGES && !INTENT) {
      page.on("worker", (w) => {
        if (w.url().includes("oomscope-worker")) wrapped = w.evaluate(wrapWorkerPost).then(() => w);
      });
    }
    if (INTENT) {
      await page.hover(".drop-zone");
      const worker = await page.waitForEvent("worker", { timeout: 60_000 });
      if (STAGES) wrapped = worker.evaluate(wrapWorkerPost).then(() => worker);
      // Up once its wasm is instantiated (it then posts Ready).
      await worker.evaluate(async () => (await wasm_bindgen()).memory.buffer.byteLength); // eslint-disable-line no-undef
      await new Promise((r) => setTimeout(r, 200));
    }
    const cpuNow = () => {
      const byKind = { renderer: 0, all: 0 };
      for (const [pid, cmdline] of descendants()) {
        const cpu = cpuSecondsOf(pid) || 0;
        byKind.all += cpu;
        if (kindOf(cmdline) === "renderer") byKind.renderer += cpu;
      }
      return byKind;
    };
    const cpu0 = cpuNow();
    const t0 = performance.now();
    const epoch0 = Date.now();
    await page.setInputFiles("#file-input", file);
    let outcome = "timeout";
    while (performance.now() - t0 < TIMEOUT_MS) {
      await sample();
      const state = await page
        .evaluate((input) => {
          const notice = document.querySelector(".notice");
          if (notice) return { done: "notice", text: notice.textContent.trim() };
          const row = document.querySelector(`table.inputs tr[data-input="${CSS.escape(input)}"]`);
          if (row && !document.querySelector("section.progress")) return { done: "report" };
          return { done: null };
        }, name)
        .catch((e) => ({ done: "page crashed", text: String(e) }));
      if (state.done) {
        outcome = state.done + (state.text ? `: ${state.text}` : "");
        break;
      }
      await new Promise((r) => setTimeout(r, SAMPLE_MS));
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu1 = cpuNow();
    const cpu = { renderer: cpu1.renderer - cpu0.renderer, all: cpu1.all - cpu0.all };
    await sample();
    let stages = null;
    if (STAGES && wrapped) {
      const worker = await wrapped.catch(() => null);
      const marks = (await worker?.evaluate(() => self.__stages).catch(() => null)) || [];
      marks.push(...((await page.evaluate(() => window.__stages).catch(() => null)) || []));
      marks.sort((a, b) => a.at - b.at);
      stages = marks.map((m) => `${m.what} ${Math.round(m.at - epoch0)}`).join(", ") + `, the loop saw it ${Math.round(seconds * 1000)}`;
    }

    let modules = null;
    let errors = null;
    let wasmBytes = null;
    let pageWasmBytes = null;
    if (outcome === "report") {
      modules = await page.locator("#module-picker option").count();
      errors = await page.locator(`table.inputs tr[data-input="${name}"] .error-message`).allTextContents();
      const worker = page.workers().find((w) => w.url().includes("oomscope-worker"));
      // `wasm_bindgen` is the worker script's global; once initialised, calling
      // it again returns the instance's exports, whose memory never shrinks.
      wasmBytes = await worker
        ?.evaluate(async () => (await wasm_bindgen()).memory.buffer.byteLength) // eslint-disable-line no-undef
        .catch(() => null);
      // The page's own wasm instance (the report it holds and draws): its
      // glue module, imported again, answers with the same instance.
      pageWasmBytes = await page
        .evaluate(async () => {
          const glue = await import(document.querySelector("script[data-js]").dataset.js);
          return (await glue.default()).memory.buffer.byteLength;
        })
        .catch(() => null);
    }
    const shot = path.join(SHOTS, `bench-xplane-${name}.png`);
    await page.screenshot({ path: shot, fullPage: false }).catch(() => {});

    const renderers = [...peaks].filter(([, p]) => p.kind === "renderer");
    return {
      name,
      size,
      seconds,
      outcome,
      modules,
      errors,
      wasmBytes,
      pageWasmBytes,
      rendererHwm: Math.max(0, ...renderers.map(([, p]) => p.hwm)),
      rendererRssBefore: Math.max(0, ...renderers.map(([pid]) => before.get(pid)?.rss || 0)),
      peakSum: memory.peakSum(),
      peakJsHeap: memory.peakJsHeap(),
      stages,
      cpu,
      shot,
    };
  } finally {
    await browser.close();
  }
}

const rows = [];
try {
  for (const file of FILES) {
    const row = await bench(file);
    rows.push(row);
    console.log(
      `${row.name}: ${row.outcome} in ${row.seconds.toFixed(2)} s${INTENT ? " (worker started on intent)" : ""}; modules ${row.modules}; ` +
        `input errors ${JSON.stringify(row.errors)}; screenshot ${row.shot}`,
    );
    console.log(`  CPU from the choice to the report: renderer ${row.cpu.renderer.toFixed(2)} s, all Chromium processes ${row.cpu.all.toFixed(2)} s`);
    if (row.stages) console.log(`  stages (ms after the choice): ${row.stages}`);
  }
} finally {
  server.close();
}

const mib = (b) => (b == null ? "-" : (b / MiB).toFixed(0));
const header = ["file", "MiB", "outcome", "s", "MB/s", "renderer peak RSS (VmHWM) MiB", "renderer RSS before MiB", "all chromium peak RSS MiB", "page JS heap peak MiB", "worker wasm memory MiB", "page wasm memory MiB"];
const table = rows.map((r) => [
  r.name,
  mib(r.size),
  r.outcome.slice(0, 40),
  r.seconds.toFixed(2),
  (r.size / 1e6 / r.seconds).toFixed(1),
  mib(r.rendererHwm),
  mib(r.rendererRssBefore),
  mib(r.peakSum),
  mib(r.peakJsHeap),
  mib(r.wasmBytes),
  mib(r.pageWasmBytes),
]);
const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => String(row[i]).length)));
const line = (cells) => "| " + cells.map((c, i) => String(c).padEnd(widths[i])).join(" | ") + " |";
console.log(line(header));
console.log("|" + widths.map((w) => "-".repeat(w + 2)).join("|") + "|");
for (const row of table) console.log(line(row));
