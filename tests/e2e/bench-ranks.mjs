// Time and memory of a drop of many per-rank PyTorch snapshots in headless
// Chromium (issue 26). Not a test: it prints numbers.
//
//   node bench-ranks.mjs DIR_OR_FILES... [--timeout SECONDS] [--shots DIR]
//
// Make the set first from a real snapshot with the growing tool, e.g. 64
// ranks of about 100 MB (names `rankNN.pickle`, which give the rank):
//   for i in $(seq -w 0 63); do
//     python3 tools/bench/grow_snapshot.py SRC.pickle /tmp/ranks/rank$i.pickle --size-mb 100
//   done
//
// A fresh browser opens the built page (OOMSCOPE_DIST, default dist/ from
// `trunk build --release`); every file is chosen at once with the page's
// file input (Playwright hands Chromium the paths; nothing is copied through
// the driver). Measured: the wall time from the choice to the ranks view
// shown (its table, progress gone), and memory sampled every 100 ms: the
// renderer's VmHWM (the kernel's own peak: the page and every analysis
// worker are threads of that process), the sum over every Chromium process,
// and the page's JS heap. `navigator.hardwareConcurrency` (how many workers
// the page starts) is printed with them.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { cpuSecondsOf, launchChromium, memoryOf, memorySampler, serveDist, takeOption } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.resolve(process.env.OOMSCOPE_DIST || path.join(ROOT, "dist"));
const SAMPLE_MS = 100;
const MiB = 2 ** 20;

const args = process.argv.slice(2);
const option = (name, fallback) => takeOption(args, name, fallback);
const TIMEOUT_MS = Number(option("--timeout", 900)) * 1000;
const SHOTS = option("--shots", "/tmp");
// --trace: print the renderer's RSS and the number of workers over time.
const TRACE = args.includes("--trace") && args.splice(args.indexOf("--trace"), 1).length > 0;
const FILES = args.flatMap((a) =>
  fs.statSync(a).isDirectory()
    ? fs.readdirSync(a).filter((n) => n.endsWith(".pickle")).sort().map((n) => path.join(a, n))
    : [a],
);
if (FILES.length === 0) {
  console.error("usage: node bench-ranks.mjs DIR_OR_FILES... [--timeout SECONDS] [--shots DIR]");
  process.exit(2);
}
const totalBytes = FILES.reduce((s, f) => s + fs.statSync(f).size, 0);

const { server, origin } = await serveDist(DIST);
const browser = await launchChromium();
try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  page.on("pageerror", (e) => console.error("page error:", String(e)));
  await page.goto(origin + "/");
  await page.locator(".verdict").waitFor({ timeout: 120_000 });
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  const memory = await memorySampler(page);
  const { peaks } = memory;
  let peakWorkers = 0;
  const sample = async () => {
    await memory.sample();
    peakWorkers = Math.max(peakWorkers, page.workers().length);
  };
  await sample();
  const before = Math.max(0, ...[...peaks].filter(([, p]) => p.kind === "renderer").map(([, p]) => p.rss));

  const renderers = () => [...peaks].filter(([, p]) => p.kind === "renderer").map(([pid]) => pid);
  const cpu = () => renderers().reduce((sum, pid) => sum + (cpuSecondsOf(pid) || 0), 0);
  const cpuBefore = cpu();
  const loadBefore = os.loadavg()[0];
  const t0 = performance.now();
  await page.setInputFiles("#file-input", FILES);
  let outcome = "timeout";
  let ranks = null;
  // The renderer's RSS while the files are analysed (before the report is drawn).
  let analysingRss = 0;
  const trace = [];
  while (performance.now() - t0 < TIMEOUT_MS) {
    await sample();
    const state = await page
      .evaluate(() => {
        const notice = document.querySelector(".notice");
        if (notice) return { done: "notice", text: notice.textContent.trim() };
        const rows = document.querySelectorAll("#ranks .ranks-table tbody tr").length;
        if (rows && !document.querySelector("section.progress")) return { done: "ranks", rows };
        return { done: null };
      })
      .catch((e) => ({ done: "page crashed", text: String(e) }));
    if (!state.done) {
      const rss = Math.max(0, ...[...peaks].filter(([, p]) => p.kind === "renderer").map(([pid]) => memoryOf(pid)?.rss || 0));
      analysingRss = Math.max(analysingRss, rss);
      if (TRACE) trace.push(`${((performance.now() - t0) / 1000).toFixed(1)}s ${(rss / MiB).toFixed(0)}MiB ${page.workers().length}w`);
    }
    if (state.done) {
      outcome = state.done + (state.text ? `: ${state.text}` : "");
      ranks = state.rows ?? null;
      break;
    }
    await new Promise((r) => setTimeout(r, SAMPLE_MS));
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpuSeconds = cpu() - cpuBefore;
  await sample();
  const errors = await page.locator("table.inputs .error-message").allTextContents().catch(() => []);
  const shot = path.join(SHOTS, "bench-ranks.png");
  await page.locator("#ranks").screenshot({ path: shot }).catch(() => page.screenshot({ path: shot }).catch(() => {}));

  const rendererPeaks = [...peaks].filter(([, p]) => p.kind === "renderer");
  const mib = (b) => (b / MiB).toFixed(0);
  console.log(`machine: ${os.cpus().length} CPUs, navigator.hardwareConcurrency ${cores}`);
  console.log(`${FILES.length} files, ${mib(totalBytes)} MiB in all: ${outcome} in ${seconds.toFixed(1)} s; ${ranks} ranks shown`);
  console.log(`input errors: ${JSON.stringify(errors)}`);
  console.log(`renderer CPU time (page and every worker): ${cpuSeconds.toFixed(1)} s; machine load average (1 min) before ${loadBefore.toFixed(1)}, after ${os.loadavg()[0].toFixed(1)}`);
  console.log(`renderer (page + workers) peak RSS (VmHWM): ${mib(Math.max(0, ...rendererPeaks.map(([, p]) => p.hwm)))} MiB (RSS before the drop: ${mib(before)} MiB)`);
  console.log(`renderer RSS while analysing (sampled, before the report is drawn): ${mib(analysingRss)} MiB`);
  console.log(`all Chromium processes, peak of the sum of RSS: ${mib(memory.peakSum())} MiB`);
  console.log(`page JS heap peak: ${mib(memory.peakJsHeap())} MiB; most workers seen at once: ${peakWorkers}`);
  console.log(`screenshot: ${shot}`);
  if (TRACE) console.log(trace.filter((_, i) => i % 20 === 0).join("\n"));
} finally {
  await browser.close();
  server.close();
}
