// What a first visit downloads, measured in a fresh Chromium (no cache, no
// service worker yet) against the trunk-built page: every request the
// server answers is recorded, and each file's size is counted gzipped
// (`gzip -9`, as the README's table counts them), once per distinct path.
//
// Two numbers, measured the same way:
// - before interactive: the requests answered until the page shows its
//   example report (the page is usable);
// - a first visit with no interaction: everything requested until the
//   service worker controls the page and the network has been quiet for
//   3 s (its install has cached what it caches).
// The analysis worker is fetched on the first drop, not before: a visit
// that never drops a file never downloads the analyzer (issue 29). After
// one drop, the worker's files are cached and analysis works offline.
//
// The numbers go to out/first-visit.json (the README quotes them).
//
// Environment: CHROMIUM (default /usr/bin/chromium), OOMSCOPE_DIST
// (default dist/ at the repository root).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { corpusDir, launchChromium, serveDist } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.resolve(process.env.OOMSCOPE_DIST || path.join(ROOT, "dist"));
const OUT = path.join(HERE, "out");
const CORPUS = corpusDir();
const TIMEOUT = 60_000;
const QUIET_MS = 3_000;
const WORKER = /oomscope-worker/;

let server;
let origin;
let browser;
let context;
let page;
/** Paths the server answered, in order, with the time of each. */
const served = [];
let serverDown = false;

/** The gzip -9 size of the dist file a path names (0 when there is none). */
function gzippedSize(pathname) {
  let file = path.join(DIST, decodeURIComponent(pathname));
  if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, "index.html");
  if (!fs.existsSync(file)) return 0;
  // `gzip -9` itself, as the README's table counts (node's zlib compresses a
  // little differently).
  return execFileSync("gzip", ["-9", "-n", "-c", file], { maxBuffer: 64 << 20 }).length;
}

/** Distinct paths of `list` and their gzipped bytes in total. */
function measure(list) {
  const paths = [...new Set(list.map((r) => r.path))];
  const bytes = paths.reduce((sum, p) => sum + gzippedSize(p), 0);
  return { paths, bytes };
}

/** Waits until the report shows an OOM event read from `inputName`. */
async function verdictFrom(inputName) {
  await page.locator(".verdict-where", { hasText: inputName }).waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
}

/** Waits until no request has reached the server for `ms`. */
async function quiet(ms) {
  for (;;) {
    const last = served.length ? served[served.length - 1].at : 0;
    const idle = Date.now() - last;
    if (idle >= ms) return;
    await new Promise((resolve) => setTimeout(resolve, ms - idle + 50));
  }
}

before(async () => {
  if (!fs.existsSync(path.join(DIST, "index.html"))) {
    throw new Error("dist/index.html missing: run `trunk build --release` first");
  }
  ({ server, origin } = await serveDist(DIST, (req) => {
    if (serverDown) {
      req.socket.destroy();
      return true;
    }
    served.push({ path: new URL(req.url, "http://localhost").pathname, at: Date.now() });
    return false;
  }));
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  fs.mkdirSync(OUT, { recursive: true });
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => server?.close(resolve));
});

test("a first visit with no interaction never downloads the analysis worker", async (t) => {
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.locator(".example-banner").waitFor({ timeout: TIMEOUT });
  const interactive = measure(served);
  // The service worker installs and takes the page; then nothing more comes.
  await page.evaluate(async () => {
    await navigator.serviceWorker.ready;
    if (!navigator.serviceWorker.controller) {
      await new Promise((resolve) => navigator.serviceWorker.addEventListener("controllerchange", resolve, { once: true }));
    }
  });
  await quiet(QUIET_MS);
  const visit = measure(served);
  const numbers = {
    before_interactive_gzip_bytes: interactive.bytes,
    first_visit_no_interaction_gzip_bytes: visit.bytes,
    worker_gzip_bytes: fs.readdirSync(DIST).filter((f) => WORKER.test(f)).reduce((sum, f) => sum + gzippedSize("/" + f), 0),
    requests_before_interactive: interactive.paths,
    requests_first_visit: visit.paths,
  };
  fs.writeFileSync(path.join(OUT, "first-visit.json"), JSON.stringify(numbers, null, 1));
  t.diagnostic(`before interactive: ${interactive.bytes} B gzipped; first visit, no interaction: ${visit.bytes} B gzipped; the worker: ${numbers.worker_gzip_bytes} B`);
  assert.deepEqual(visit.paths.filter((p) => WORKER.test(p)), [], "worker files fetched without a drop");
  assert.ok(visit.paths.includes("/sw.js"), `the service worker was fetched: ${visit.paths}`);
  // The page's wasm is what shows it: both numbers count it, and the visit
  // adds only the service worker (and what its install re-reads).
  assert.ok(interactive.paths.some((p) => p.endsWith("_bg.wasm")), `${interactive.paths}`);
  assert.ok(visit.bytes - interactive.bytes < 20_000, `${visit.bytes} vs ${interactive.bytes}`);
});

test("the first drop fetches the worker, which then works offline", async () => {
  const file = path.join(CORPUS, "logs/01_tpu_compile_hbm.txt");
  await page.setInputFiles("#file-input", file);
  await verdictFrom("01_tpu_compile_hbm.txt");
  assert.ok(served.some((r) => WORKER.test(r.path)), "the drop fetched the worker");
  // Offline, a fresh page analyses again from the service worker's cache.
  await quiet(1_000);
  await context.setOffline(true);
  serverDown = true;
  try {
    await page.reload({ timeout: TIMEOUT });
    await page.locator(".example-banner").waitFor({ timeout: TIMEOUT });
    await page.setInputFiles("#file-input", file);
    await verdictFrom("01_tpu_compile_hbm.txt");
  } finally {
    serverDown = false;
    await context.setOffline(false);
  }
});
