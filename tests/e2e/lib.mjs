// Shared by the browser tests: serving the trunk-built page on 127.0.0.1.

import { before, after } from "node:test";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root. */
export const REPOSITORY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * The shared corpus of real inputs, read in place: `OOMSCOPE_CORPUS`, else
 * `../shared/corpus` beside the repository (as the Rust tests'
 * `oomscope-testdata`). Throws naming the path when it is not there.
 */
export function corpusDir() {
  const dir = process.env.OOMSCOPE_CORPUS || path.resolve(REPOSITORY, "../shared/corpus");
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new Error(`the shared corpus is not at ${dir}: check out shared/ beside the repository, or set OOMSCOPE_CORPUS to the corpus folder`);
  }
  return dir;
}

export const CONTENT_TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".wasm": "application/wasm",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".json": "application/json",
  ".png": "image/png",
};

/** Answers `req` with the file under `dist` it names (never outside `dist`). */
export function serveFile(dist, req, res) {
  const url = new URL(req.url, "http://localhost");
  let file = path.normalize(path.join(dist, decodeURIComponent(url.pathname)));
  if (!file.startsWith(dist)) {
    res.writeHead(403).end();
    return;
  }
  if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, "index.html");
  fs.readFile(file, (err, body) => {
    if (err) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    res.writeHead(200, {
      "content-type": CONTENT_TYPES[path.extname(file)] || "application/octet-stream",
      "cache-control": "no-cache",
    });
    res.end(body);
  });
}

// Debian's Chromium, headless, with nothing that would reach the network.
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

/** Launches Chromium (CHROMIUM, default /usr/bin/chromium); never downloads one. */
export async function launchChromium() {
  const { chromium } = await import("playwright-core");
  return chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: CHROMIUM_ARGS });
}

/**
 * Serves `dist` on 127.0.0.1 at a free port; returns { server, origin }.
 * `before(req, res)`, if given, sees each request first and returns true
 * when it answered it itself.
 */
export async function serveDist(dist, before = () => false) {
  const http = await import("node:http");
  const server = http.createServer((req, res) => before(req, res) || serveFile(dist, req, res));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, origin: `http://127.0.0.1:${server.address().port}` };
}

/**
 * Waits until the report section `id` is where the page scrolls a section
 * to: just below the sticky header (or as far as the page can scroll).
 */
export async function sectionAtTop(page, id, timeout = 60_000) {
  const placed = (id) => {
    const header = document.querySelector(".page-header").getBoundingClientRect().bottom;
    const top = document.getElementById(id).getBoundingClientRect().top;
    const atBottom = window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2;
    return (top >= header && top <= header + 12) || (top > header && atBottom);
  };
  await page.waitForFunction(placed, id, { timeout }).catch(async (e) => {
    const where = await page.evaluate((id) => [document.getElementById(id).getBoundingClientRect().top, window.scrollY], id);
    throw new Error(`#${id} is at ${where[0]}px (page scrolled ${where[1]}px), not below the header: ${e.message}`);
  });
}

/**
 * Serves `dist`, opens the page on its built-in example report in a fresh
 * Chromium (1280×900) and records page errors and Content-Security-Policy
 * violations (an inline style the policy drops is a view drawn wrong). Returns
 * { server, origin, browser, page, pageErrors, cspViolations, close }.
 */
export async function openExamplePage(dist, timeout = 60_000) {
  if (!fs.existsSync(path.join(dist, "index.html"))) {
    throw new Error("dist/index.html missing: run `trunk build --release` first");
  }
  const { server, origin } = await serveDist(dist);
  const browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  const cspViolations = [];
  page.on("console", (message) => {
    if (message.type() === "error" && /Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  await page.goto(origin + "/", { timeout });
  await page.locator(".example-banner").waitFor({ timeout });
  const close = async () => {
    await browser.close();
    await new Promise((resolve) => server.close(resolve));
  };
  return { server, origin, browser, page, pageErrors, cspViolations, close };
}

/** Drops files (`[{ name, path }]`) on the page together, as a user drags them in. */
export async function dropFiles(page, files) {
  const payload = files.map(({ name, path: file }) => ({ name, bytes: fs.readFileSync(file).toString("base64") }));
  await page.evaluate((files) => {
    const transfer = new DataTransfer();
    for (const { name, bytes } of files) {
      const data = Uint8Array.from(atob(bytes), (c) => c.charCodeAt(0));
      transfer.items.add(new File([data], name, { type: "application/octet-stream" }));
    }
    for (const type of ["dragenter", "dragover", "drop"]) {
      document.body.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }));
    }
  }, payload);
}

/** The rows of a CSV export (CRLF lines, RFC 4180 quoting), as arrays of cells. */
export function csvRows(text) {
  return text.trim().split("\r\n").map((line) => {
    const out = [];
    let field = "";
    let quoted = false;
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (quoted) {
        if (c === '"' && line[i + 1] === '"') (field += '"'), i++;
        else if (c === '"') quoted = false;
        else field += c;
      } else if (c === '"') quoted = true;
      else if (c === ",") out.push(field), (field = "");
      else field += c;
    }
    out.push(field);
    return out;
  });
}

/** Where the built page is (`OOMSCOPE_DIST`, else dist/) and where tests write screenshots. */
export const DIST = path.resolve(process.env.OOMSCOPE_DIST || path.join(REPOSITORY, "dist"));
export const OUT = path.join(REPOSITORY, "tests/e2e/out");

/**
 * Opens the example page before a test file's tests and closes it after
 * them (node:test hooks). The returned object holds `page`, `pageErrors`
 * and `cspViolations` once the hook has run.
 */
export function exampleSuite(timeout = 60_000, { clipboard = false } = {}) {
  const suite = {};
  before(async () => {
    fs.mkdirSync(OUT, { recursive: true });
    Object.assign(suite, await openExamplePage(DIST, timeout));
    if (clipboard) {
      // "Copy link" writes the link where the test reads it back.
      await suite.page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: suite.origin });
    }
  });
  after(async () => {
    await suite.close?.();
  });
  return suite;
}

/** Drops every `*.prof` of `dir` (sorted by name) together; asserts there are `count`. */
export async function dropProfiles(page, dir, count) {
  const names = fs.readdirSync(dir).filter((n) => n.endsWith(".prof")).sort();
  if (names.length !== count) throw new Error(`${dir}: ${names.length} profiles, expected ${count}`);
  await dropFiles(page, names.map((name) => ({ name, path: path.join(dir, name) })));
}

/** The 1-based number of the first line of `file` that `matches` (a generator's own line); throws when none. */
export function lineOf(file, matches) {
  const line = fs.readFileSync(file, "utf8").split("\n").findIndex(matches) + 1;
  if (line === 0) throw new Error(`no such line in ${file}`);
  return line;
}

/** The buffer timeline's frame, from the canvas's data attributes (plot box in canvas pixels, visible range). */
export async function timelineFrame(page) {
  return page.locator(".timeline-canvas").evaluate((c) => {
    const [left, top, width, height] = c.dataset.plot.split(",").map(Number);
    const r = c.getBoundingClientRect();
    return { x0: Number(c.dataset.x0), x1: Number(c.dataset.x1), yMax: Number(c.dataset.yMax), left, top, width, height, clientLeft: r.left, clientTop: r.top };
  });
}

/** Hovers (program position, bytes) on the buffer timeline; returns the tooltip's buffer name. */
export async function timelineBufferAt(page, position, bytes, timeout = 60_000) {
  await page.locator(".timeline-canvas").scrollIntoViewIfNeeded();
  const f = await timelineFrame(page);
  const x = f.left + ((position - f.x0) / (f.x1 - f.x0)) * f.width;
  const y = f.top + f.height - (bytes / f.yMax) * f.height;
  await page.mouse.move(f.clientLeft + x, f.clientTop + y);
  const tip = page.locator(".timeline-tooltip");
  await tip.waitFor({ timeout });
  return tip.getAttribute("data-buffer");
}

// Memory of the Chromium processes a benchmark started (bench-*.mjs).

/** Every process below this one: pid → command line. */
export function descendants() {
  const children = new Map();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(entry));
    } catch {
      // The process ended while listed.
    }
  }
  const found = new Map();
  const stack = [process.pid];
  while (stack.length) {
    for (const child of children.get(stack.pop()) || []) {
      try {
        found.set(child, fs.readFileSync(`/proc/${child}/cmdline`, "utf8").split("\0").join(" "));
      } catch {
        continue;
      }
      stack.push(child);
    }
  }
  return found;
}

/** VmRSS and VmHWM of a process in bytes, or null once it has ended. */
export function memoryOf(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] || 0) * 1024;
    return { rss: kib("VmRSS"), hwm: kib("VmHWM") };
  } catch {
    return null;
  }
}

/** CPU seconds (user + system) a process has used, its ended threads included; null once it has ended. */
export function cpuSecondsOf(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime are fields 14 and 15 of stat, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

export const kindOf = (cmdline) => /--type=([a-z-]+)/.exec(cmdline)?.[1] || (cmdline.includes("chrom") ? "browser" : "other");

/**
 * Samples the memory of every Chromium process this script started and the
 * page's JS heap (CDP). `sample()` once per tick; `peaks` maps pid to
 * { kind, rss, hwm } (VmHWM: the kernel's own peak), `peakSum()` the largest
 * sum of RSS seen, `peakJsHeap()` the page's largest JS heap.
 */
export async function memorySampler(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  const peaks = new Map();
  let peakSum = 0;
  let peakJsHeap = 0;
  const sample = async () => {
    let sum = 0;
    for (const [pid, cmdline] of descendants()) {
      const m = memoryOf(pid);
      if (!m) continue;
      sum += m.rss;
      const p = peaks.get(pid) || { kind: kindOf(cmdline), rss: 0, hwm: 0 };
      p.rss = Math.max(p.rss, m.rss);
      p.hwm = Math.max(p.hwm, m.hwm);
      peaks.set(pid, p);
    }
    peakSum = Math.max(peakSum, sum);
    try {
      const { metrics } = await cdp.send("Performance.getMetrics");
      peakJsHeap = Math.max(peakJsHeap, metrics.find((m) => m.name === "JSHeapUsedSize")?.value || 0);
    } catch {
      // The page is gone (a crashed renderer); the process samples remain.
    }
  };
  return { sample, peaks, peakSum: () => peakSum, peakJsHeap: () => peakJsHeap };
}

/** Removes `name VALUE` from a benchmark's `args` and returns VALUE (or `fallback`). */
export function takeOption(args, name, fallback) {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const [, value] = args.splice(i, 2);
  return value;
}
