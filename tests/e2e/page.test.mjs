// End-to-end tests of the trunk-built page (dist/) in Debian's headless
// Chromium, driven by playwright-core (no browser is ever downloaded).
//
// The page is served by a tiny static server on 127.0.0.1. Every request
// the browser makes is recorded; any request to another origin fails the
// run. The numbers asserted are read from the input files themselves (the
// corpus `# expect:` lines, the fixture's compile log), never copied from
// the page's own output.
//
// Environment: CHROMIUM (default /usr/bin/chromium), OOMSCOPE_CORPUS
// (default ../shared/corpus beside the repository).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { corpusDir, launchChromium, serveDist } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.join(ROOT, "dist");
const OUT = path.join(HERE, "out");
const CORPUS = corpusDir();
const FIXTURE = path.join(ROOT, "fixtures/oom-single-buffer");
const TIMEOUT = 60_000;


let server;
let origin;
let browser;
let context;
let page;
const requests = [];
const foreignRequests = [];
const pageErrors = [];
// While set, the server answers nothing (the network is "cut").
let serverDown = false;
const servedWhileDown = [];

// --- numbers as the inputs print them ------------------------------------

const BINARY = { B: 0, K: 10, M: 20, G: 30, T: 40, P: 50, E: 60 };

/** `17.60G` → round(17.60 × 2^30), TPU's binary units as printed. */
function tpuBytes(text) {
  const m = /^([0-9.]+)([BKMGTPE])$/.exec(text);
  assert.ok(m, `not a TPU size: ${text}`);
  return Math.round(Number(m[1]) * 2 ** BINARY[m[2]]);
}

/** The `# expect:` line of a corpus log. */
function expectLine(file) {
  const line = fs.readFileSync(file, "utf8").split("\n").find((l) => l.startsWith("# expect:"));
  assert.ok(line, `${file} has no # expect: line`);
  return line;
}

function expectValue(line, key) {
  const m = new RegExp(`\\b${key}=([0-9.]+[BKMGTPE])\\b`).exec(line);
  assert.ok(m, `no ${key}= in ${line}`);
  return tpuBytes(m[1]);
}

// --- the page --------------------------------------------------------------

/** While the "network" is down, every request is cut. */
function refuseWhileDown(req) {
  if (!serverDown) return false;
  servedWhileDown.push(req.url);
  req.socket.destroy();
  return true;
}

async function bytesOf(locator) {
  const value = await locator.getAttribute("data-bytes", { timeout: TIMEOUT });
  return Number(value);
}

/** Waits until the report shows an OOM event read from `inputName`. */
async function waitForVerdictFrom(inputName) {
  await page.locator(".verdict-where", { hasText: inputName }).waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
}

async function screenshot(name) {
  await page.screenshot({ path: path.join(OUT, name), fullPage: true });
}

before(async () => {
  assert.ok(fs.existsSync(path.join(DIST, "index.html")), "dist/index.html missing: run `trunk build --release` first");
  fs.mkdirSync(OUT, { recursive: true });
  ({ server, origin } = await serveDist(DIST, refuseWhileDown));

  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // Every request from the page, its workers and its service worker.
  await context.route("**/*", (route) => {
    const url = route.request().url();
    requests.push(url);
    if (new URL(url).origin !== origin) {
      foreignRequests.push(url);
      return route.abort("blockedbyclient");
    }
    return route.continue();
  });
  context.on("request", (request) => {
    const url = request.url();
    if (!url.startsWith("data:") && !url.startsWith("blob:") && new URL(url).origin !== origin) {
      foreignRequests.push(url);
    }
  });
  await context.addInitScript(() => {
    window.__cspViolations = [];
    document.addEventListener("securitypolicyviolation", (e) => {
      window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  page = await context.newPage();
  page.on("pageerror", (error) => pageErrors.push(String(error)));
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
});

test("the page opens on the embedded example report, with the compile log's numbers", async () => {
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.locator(".example-banner").waitFor({ timeout: TIMEOUT });
  await page.locator(".verdict").waitFor({ timeout: TIMEOUT });

  const log = fs.readFileSync(path.join(FIXTURE, "compile.log"), "utf8");
  const m = /Used ([0-9.]+[KMGTE]) of ([0-9.]+[KMGTE]) hbm\. Exceeded hbm capacity by ([0-9.]+[KMGTE])/.exec(log);
  assert.ok(m, "the fixture's compile log has no 'Used X of Y hbm' line");
  assert.equal(await bytesOf(page.locator('.verdict [data-field="used"] .bytes')), tpuBytes(m[1]));
  assert.equal(await bytesOf(page.locator('.verdict [data-field="limit"] .bytes')), tpuBytes(m[2]));
  assert.equal(await bytesOf(page.locator('.verdict [data-field="excess"] .bytes')), tpuBytes(m[3]));

  // Every user-facing file of the fixture was an input.
  const listed = await page.locator("table.inputs tbody tr").evaluateAll((rows) => rows.map((r) => r.dataset.input));
  for (const name of ["compile.log", "module_0000.jit_head.cl_1014260217.after_optimizations.txt"]) {
    assert.ok(listed.includes(`oom-single-buffer/${name}`), `${name} missing from inputs: ${listed}`);
  }
  await screenshot("example.png");
  await page.screenshot({ path: path.join(OUT, "example-top.png") });
});

test("a corpus log chosen with the page's file input shows its OOM numbers", async () => {
  const file = path.join(CORPUS, "logs/01_tpu_compile_hbm.txt");
  const expect = expectLine(file);
  await page.setInputFiles("#file-input", file);
  await waitForVerdictFrom("01_tpu_compile_hbm.txt");

  assert.equal(await bytesOf(page.locator('.verdict [data-field="used"] .bytes')), expectValue(expect, "used"));
  assert.equal(await bytesOf(page.locator('.verdict [data-field="limit"] .bytes')), expectValue(expect, "limit"));
  assert.equal(await bytesOf(page.locator('.verdict [data-field="excess"] .bytes')), expectValue(expect, "exceeded"));
  const top = /top#1 size=([0-9.]+[BKMGTPE])/.exec(expect);
  assert.ok(top, "no top#1 in the expect line");
  assert.equal(await bytesOf(page.locator('table.allocations tr[data-rank="1"] .bytes').first()), tpuBytes(top[1]));
  const listed = /(\d+) allocations listed/.exec(expect);
  assert.equal(await page.locator("table.allocations tbody tr").count(), Number(listed[1]));
  assert.equal(await page.locator(".example-banner").count(), 0, "the example banner must go");
  await screenshot("corpus-log.png");
});

test("a file dropped on the page is analysed", async () => {
  const file = path.join(CORPUS, "logs/58_tpu_sparsecore.txt");
  const expect = expectLine(file);
  await page.evaluate((text) => {
    const transfer = new DataTransfer();
    transfer.items.add(new File([text], "dropped sparsecore.log", { type: "text/plain" }));
    for (const type of ["dragenter", "dragover", "drop"]) {
      document.body.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }));
    }
  }, fs.readFileSync(file, "utf8"));
  await waitForVerdictFrom("dropped sparsecore.log");
  assert.equal(await bytesOf(page.locator('.verdict [data-field="tensorcore"] .bytes')), expectValue(expect, "tensorcore_hbm"));
  assert.equal(await bytesOf(page.locator('.verdict [data-field="sparsecore"] .bytes')), expectValue(expect, "sparsecore_hbm"));
  assert.equal(await bytesOf(page.locator('.verdict [data-field="limit"] .bytes')), expectValue(expect, "available"));
});

test("a whole folder chosen with the folder picker is analysed as a dump", async () => {
  await page.setInputFiles("#folder-input", FIXTURE);
  await page.locator("#modules .module-detail").waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
  const listed = await page.locator("table.inputs tbody tr").evaluateAll((rows) => rows.map((r) => r.dataset.input));
  assert.ok(
    listed.some((name) => name.endsWith("/module_0000.jit_head.cl_1014260217.after_optimizations.txt")),
    `the folder's dump files keep their folder path: ${listed}`,
  );
  const modules = await page.locator("#module-picker option").allTextContents();
  assert.ok(modules.some((t) => t.includes("jit_head")), `module picker lists jit_head: ${modules}`);
  assert.ok(await page.locator("#modules canvas").first().isVisible(), "the module's memory is drawn");
  await screenshot("folder.png");
});

test("an XProf profile is read by slices in the worker and matches XProf's Memory Viewer", async () => {
  const run = path.join(CORPUS, "xla-runs/cpu-xplane");
  const oracle = JSON.parse(fs.readFileSync(path.join(run, "cpu_jit_mlp_memory_viewer.json"), "utf8"));
  await page.setInputFiles("#file-input", path.join(run, "vm.xplane.pb"));
  await page.locator('table.inputs tr[data-input="vm.xplane.pb"]').waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
  const option = page.locator("#module-picker option", { hasText: `${oracle.moduleName}(` });
  await page.selectOption("#module-picker", await option.first().getAttribute("value"));
  await page.locator(`#modules .module-detail[data-module^="${oracle.moduleName}("]`).waitFor({ timeout: TIMEOUT });
  assert.equal(
    await bytesOf(page.locator('#modules .module-detail [data-field="peak"] .bytes')),
    Math.round(oracle.peakHeapMib * 2 ** 20),
  );
  await screenshot("xplane.png");
});

test("a PNG and a truncated file get clear per-file errors while the rest loads", async () => {
  const png = await page.screenshot();
  const proto = fs.readFileSync(path.join(FIXTURE, "module_0000.jit_head.cl_1014260217.after_optimizations.hlo.pb"));
  const truncated = proto.subarray(0, Math.floor(proto.length / 3));
  const good = path.join(CORPUS, "logs/01_tpu_compile_hbm.txt");
  await page.setInputFiles("#file-input", [
    { name: "screenshot.png", mimeType: "image/png", buffer: png },
    { name: "truncated.hlo.pb", mimeType: "application/octet-stream", buffer: truncated },
    { name: path.basename(good), mimeType: "text/plain", buffer: fs.readFileSync(good) },
  ]);
  await waitForVerdictFrom("01_tpu_compile_hbm.txt");

  for (const name of ["screenshot.png", "truncated.hlo.pb"]) {
    const item = page.locator(`.errors li.input-error[data-input="${name}"]`);
    await item.waitFor({ timeout: TIMEOUT });
    const message = (await item.locator(".error-message").textContent()).trim();
    assert.ok(message.length > 10, `error for ${name} says what is wrong: "${message}"`);
  }
  // The good file still loaded, with its numbers.
  const expect = expectLine(good);
  assert.equal(await bytesOf(page.locator('.verdict [data-field="used"] .bytes')), expectValue(expect, "used"));
  await screenshot("errors.png");

  // And the page keeps working: a pasted log is analysed next.
  const pasted = fs.readFileSync(path.join(CORPUS, "logs/72_tpu_compile_hbm.txt"), "utf8");
  await page.locator(".paste summary").click();
  await page.locator("#paste-text").fill(pasted);
  await page.getByRole("button", { name: "Analyse pasted text" }).click();
  await waitForVerdictFrom("pasted log.txt");
  const requested = /requested=(\d+) bytes/.exec(expectLine(path.join(CORPUS, "logs/72_tpu_compile_hbm.txt")));
  assert.equal(await bytesOf(page.locator('.verdict [data-field="requested"] .bytes')), Number(requested[1]));
});

test("the drop zone works from the keyboard alone and every control is labelled", async () => {
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.locator(".verdict").waitFor({ timeout: TIMEOUT });
  const unlabelled = await page.evaluate(() =>
    [...document.querySelectorAll("button, input, select, textarea, summary, canvas")]
      .filter((el) => {
        const named =
          el.getAttribute("aria-label") ||
          (el.id && document.querySelector(`label[for="${el.id}"]`)) ||
          el.closest("label") ||
          (el.tagName !== "INPUT" && el.textContent.trim());
        return !named;
      })
      .map((el) => el.outerHTML.slice(0, 80)),
  );
  assert.deepEqual(unlabelled, []);

  // Tab to "Choose files…" and open it with Enter.
  let focused = "";
  for (let i = 0; i < 20 && focused !== "Choose files…"; i++) {
    await page.keyboard.press("Tab");
    focused = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? "");
  }
  assert.equal(focused, "Choose files…", "the file button is reachable with Tab");
  // Under load the first key press can land before the button's handler is
  // ready; a person would press again, so the test does too (bounded),
  // each time on the button itself (focus may have moved meanwhile).
  let chooser;
  for (let attempt = 0; attempt < 3 && !chooser; attempt++) {
    if (attempt > 0) {
      const where = await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 80) ?? "");
      console.log(`# Enter opened no file chooser; focus was on ${where}; pressing again`);
      await page.locator(".drop-actions button", { hasText: "Choose files…" }).focus();
    }
    [chooser] = await Promise.all([
      page.waitForEvent("filechooser", { timeout: 10_000 }).catch(() => undefined),
      page.keyboard.press("Enter"),
    ]);
  }
  assert.ok(chooser, "Enter on the focused button opens the file chooser");
  const file = path.join(CORPUS, "logs/62_tpu_compile_hbm.txt");
  await chooser.setFiles(file);
  await waitForVerdictFrom("62_tpu_compile_hbm.txt");
  assert.equal(await bytesOf(page.locator('.verdict [data-field="limit"] .bytes')), expectValue(expectLine(file), "limit"));
});

test("text has readable contrast against its background", async () => {
  const failures = await page.evaluate(() => {
    const rgb = (s) => (s.match(/[\d.]+/g) || []).map(Number);
    const lum = ([r, g, b]) =>
      [r, g, b]
        .map((v) => v / 255)
        .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4))
        .reduce((acc, v, i) => acc + v * [0.2126, 0.7152, 0.0722][i], 0);
    const background = (el) => {
      for (let e = el; e; e = e.parentElement) {
        const c = rgb(getComputedStyle(e).backgroundColor);
        if (c.length >= 3 && (c.length < 4 || c[3] === 1)) return c;
      }
      return [255, 255, 255];
    };
    const out = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      if (!node.textContent.trim() || !el || !el.checkVisibility?.()) continue;
      const fg = rgb(getComputedStyle(el).color);
      const [a, b] = [lum(fg), lum(background(el))].sort((x, y) => y - x);
      const ratio = (a + 0.05) / (b + 0.05);
      if (ratio < 4.5) out.push(`${ratio.toFixed(2)} ${el.tagName}.${el.className}: ${node.textContent.trim().slice(0, 40)}`);
    }
    return out;
  });
  assert.deepEqual(failures, []);
});

test("after the first visit the page works with the network cut", async () => {
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.evaluate(async () => {
    await navigator.serviceWorker.ready;
    if (!navigator.serviceWorker.controller) {
      await new Promise((resolve) => navigator.serviceWorker.addEventListener("controllerchange", resolve, { once: true }));
    }
  });
  await context.setOffline(true);
  serverDown = true;
  try {
    await page.reload({ timeout: TIMEOUT });
    await page.locator(".example-banner").waitFor({ timeout: TIMEOUT });
    await page.locator(".verdict").waitFor({ timeout: TIMEOUT });
    const file = path.join(CORPUS, "logs/01_tpu_compile_hbm.txt");
    await page.setInputFiles("#file-input", file);
    await waitForVerdictFrom("01_tpu_compile_hbm.txt");
    assert.equal(await bytesOf(page.locator('.verdict [data-field="used"] .bytes')), expectValue(expectLine(file), "used"));
    await screenshot("offline.png");
    // Only the browser's own update check of the service worker script may
    // try the (refusing) server; the page's files all came from the cache.
    assert.deepEqual(servedWhileDown.filter((url) => url !== "/sw.js"), [], "requests that reached the server while offline");
  } finally {
    serverDown = false;
    await context.setOffline(false);
  }
});

test("no request left the page's origin, no CSP violation, no script error", async () => {
  assert.ok(requests.length > 0, "requests were recorded");
  assert.deepEqual(foreignRequests, [], "requests to other origins");
  const violations = await page.evaluate(() => window.__cspViolations);
  assert.deepEqual(violations, [], "Content-Security-Policy violations");
  assert.deepEqual(pageErrors, [], "uncaught page errors");
});
