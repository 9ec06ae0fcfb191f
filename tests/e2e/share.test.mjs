// Permalinks in the browser: "Copy link" on the example report, the link
// opened in a fresh browser context (no shared storage, no worker state)
// shows the same verdict; hostile links (truncated, bit-flipped, newer
// version, decompression bomb, oversized) give a clear error and leave the
// page usable; strings a link carries are shown as text, never as HTML.
//
// The numbers compared are the original page's own (the example's
// verdict, itself checked against the fixture's compile log in
// page.test.mjs): the point here is that the link carries them unchanged.
// Every request is recorded; any request to another origin fails the run.
//
// Environment: CHROMIUM (default /usr/bin/chromium), OOMSCOPE_CORPUS
// (default ../shared/corpus beside the repository).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";
import { corpusDir, dropFiles, launchChromium, sectionAtTop, serveDist } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.join(ROOT, "dist");
const OUT = path.join(HERE, "out");
const CORPUS = corpusDir();
const TIMEOUT = 60_000;
const HOSTILE_NAME = "<img src=x onerror=window.__xss=1>.txt";


let server;
let origin;
let browser;
const contexts = [];
const foreignRequests = [];
const pageErrors = [];
// The link made from the example, and the example's verdict numbers.
let exampleLink;
let exampleNumbers;

/** A fresh browser context (own storage, own workers) and a page in it. */
async function freshPage() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  contexts.push(context);
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin });
  await context.route("**/*", (route) => {
    const url = route.request().url();
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
  const page = await context.newPage();
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  // A Rust panic's message reaches the console (console_error_panic_hook).
  page.on("console", (m) => m.type() === "error" && console.log(`# console error: ${m.text().slice(0, 12000)}`));
  return page;
}

async function bytesOf(page, selector) {
  return Number(await page.locator(selector).first().getAttribute("data-bytes", { timeout: TIMEOUT }));
}

/** The figures a reader compares: the verdict and the selected module's. */
async function verdictNumbers(page) {
  const numbers = {};
  for (const field of ["used", "limit", "excess"]) {
    numbers[field] = await bytesOf(page, `.verdict [data-field="${field}"] .bytes`);
  }
  numbers.kind = (await page.locator("#verdict-title").first().textContent()).trim();
  numbers.modulePeak = await bytesOf(page, '#modules .module-detail [data-field="peak"] .bytes');
  numbers.module = await page.locator("#module-picker").inputValue();
  return numbers;
}

/** Clicks "Copy link" and returns the link the page made. */
async function copyLink(page) {
  // A real click on the sticky header never scrolls; Playwright's click
  // would first scroll the button "into view" (below the page's
  // scroll-padding), moving the report the link is about.
  await page.locator("#copy-link").dispatchEvent("click");
  await page.locator("#share-link").waitFor({ timeout: TIMEOUT });
  await page.locator('.share-status[data-copied="true"]').waitFor({ timeout: TIMEOUT });
  const link = await page.locator("#share-link").inputValue();
  const clipboard = await page.evaluate(() => navigator.clipboard.readText());
  assert.equal(clipboard, link, "the clipboard holds the link shown");
  const status = await page.locator(".share-status").getAttribute("data-length");
  assert.equal(Number(status), link.length, "the page states the link's length");
  return link;
}

/** Opens `url` in a fresh context and waits for the error banner. */
async function openHostile(url) {
  const page = await freshPage();
  await page.goto(url, { timeout: TIMEOUT });
  const notice = page.locator(".notice", { hasText: "This shared link could not be opened" });
  await notice.waitFor({ timeout: TIMEOUT }).catch(async (e) => {
    console.log(`# page says: ${(await page.locator("body").innerText()).slice(0, 400)}`);
    throw e;
  });
  return { page, message: (await notice.textContent()).trim() };
}

/** The payload of a link, and the link rebuilt around another payload. */
function payloadOf(link) {
  const m = /#r=1\.([A-Za-z0-9_-]+)$/.exec(link);
  assert.ok(m, `not a version-1 link: ${link.slice(0, 80)}…`);
  return m[1];
}

before(async () => {
  assert.ok(fs.existsSync(path.join(DIST, "index.html")), "dist/index.html missing: run `trunk build --release` first");
  fs.mkdirSync(OUT, { recursive: true });
  ({ server, origin } = await serveDist(DIST));
  browser = await launchChromium();
});

after(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
});

test("Copy link on the example, opened in a fresh context, shows the same verdict", async () => {
  const page = await freshPage();
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.locator(".example-banner").waitFor({ timeout: TIMEOUT });
  await page.locator("#modules .module-detail").waitFor({ timeout: TIMEOUT });
  exampleNumbers = await verdictNumbers(page);
  // The sender looks at the module section: the link carries that view.
  await page.evaluate(() => document.getElementById("modules").scrollIntoView());
  exampleLink = await copyLink(page);
  assert.ok(exampleLink.startsWith(origin + "/#r=1."), exampleLink.slice(0, 80));
  const reduced = await page.locator(".share-reduced").count();
  console.log(`# example link: ${exampleLink.length} characters, ${reduced ? "reduced" : "not reduced"}`);
  assert.ok(exampleLink.length <= 4096 + origin.length + 2, "the example (a typical OOM) fits the 4 KB budget");
  await page.screenshot({ path: path.join(OUT, "share-copied.png") });

  const shared = await freshPage();
  await shared.goto(exampleLink, { timeout: TIMEOUT });
  await shared.locator(".shared-banner").waitFor({ timeout: TIMEOUT });
  await shared.locator("#modules .module-detail").waitFor({ timeout: TIMEOUT });
  assert.equal(await shared.locator(".example-banner:not(.shared-banner)").count(), 0, "the example must not replace a link");
  assert.deepEqual(await verdictNumbers(shared), exampleNumbers);
  const banner = (await shared.locator(".shared-banner").textContent()).replace(/\s+/g, " ");
  assert.match(banner, /Shared report · made .+ · from .*oom-single-buffer\/compile\.log/);
  // The heap curve the link carries is drawn.
  assert.ok(await shared.locator("#modules canvas").first().isVisible(), "the shared module's heap is drawn");
  // The carried view (the module section) is where the page scrolls to.
  await sectionAtTop(shared, "modules");
  await shared.screenshot({ path: path.join(OUT, "share-opened.png") });
  await shared.screenshot({ path: path.join(OUT, "share-opened-full.png"), fullPage: true });
});

test("the pinned buffer and the opened tree node travel with the link", async () => {
  const page = await freshPage();
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.locator("#modules .timeline-canvas").waitFor({ timeout: TIMEOUT });
  // Pin a buffer the tree cites, through its link to the timeline.
  const cited = page.locator('#diagnosis [data-node="large_allocations"] > details table.cited-buffers tbody tr').first();
  const name = await cited.getAttribute("data-buffer");
  await cited.locator('button[data-show="timeline"]').click();
  await page.locator(`#modules .timeline-pinned[data-buffer="${name}"]`).waitFor({ timeout: TIMEOUT });
  const pinnedLink = await copyLink(page);

  const shared = await freshPage();
  await shared.goto(pinnedLink, { timeout: TIMEOUT });
  await shared.locator(".shared-banner").waitFor({ timeout: TIMEOUT });
  // The shared timeline draws the peak buffers the link carries, and pins the sender's.
  await shared.locator(`#modules .timeline-pinned[data-buffer="${name}"]`).waitFor({ timeout: TIMEOUT });
  await sectionAtTop(shared, "modules");
  await shared.screenshot({ path: path.join(OUT, "share-pinned.png") });

  // Open a tree node that is off the selected path: the link carries it.
  // A node the sender's tree shows closed (off the selected path).
  const offPath = await page
    .locator("#diagnosis .tree-node")
    .evaluateAll((nodes) => nodes.filter((n) => n.offsetParent !== null && n.querySelector(":scope > details:not([open])")).map((n) => n.dataset.node));
  assert.ok(offPath.length > 0, "the tree has a closed node in view");
  const nodeId = offPath[0];
  const node = page.locator(`#diagnosis [data-node="${nodeId}"]`);
  assert.equal(await node.locator(":scope > details").getAttribute("open"), null, "off the path, the node starts closed");
  await node.locator(":scope > details > summary").click();
  const nodeLink = await copyLink(page);
  const opened = await freshPage();
  await opened.goto(nodeLink, { timeout: TIMEOUT });
  await opened.locator(".shared-banner").waitFor({ timeout: TIMEOUT });
  const focused = opened.locator(`#diagnosis .tree-node.focused[data-node="${nodeId}"]`);
  await focused.waitFor({ timeout: TIMEOUT });
  assert.notEqual(await focused.locator(":scope > details").getAttribute("open"), null, "the carried node is open");
  await sectionAtTop(opened, "diagnosis");

  // The user's own files replace the shared report, and the stale link
  // leaves the address bar (a reload must not bring the old report back).
  await opened.setInputFiles("#file-input", path.join(CORPUS, "logs/58_tpu_sparsecore.txt"));
  await opened.locator(".verdict-where", { hasText: "58_tpu_sparsecore.txt" }).waitFor({ timeout: TIMEOUT });
  assert.equal(await opened.evaluate(() => window.location.hash), "");
  assert.equal(await opened.locator(".shared-banner").count(), 0);
});

test("a padding row selected travels with the link", async () => {
  const page = await freshPage();
  await page.goto(origin + "/", { timeout: TIMEOUT });
  const row = page.locator("#padding table.padding-table tbody tr").last();
  await row.waitFor({ timeout: TIMEOUT });
  const name = await row.getAttribute("data-key");
  await row.click();
  await page.locator(`#padding table.padding-table tbody tr.selected[data-key="${name}"]`).waitFor({ timeout: TIMEOUT });
  const link = await copyLink(page);

  const shared = await freshPage();
  await shared.goto(link, { timeout: TIMEOUT });
  await shared.locator(".shared-banner").waitFor({ timeout: TIMEOUT });
  await shared.locator(`#padding table.padding-table tbody tr.selected[data-key="${name}"]`).waitFor({ timeout: TIMEOUT });
  await sectionAtTop(shared, "padding");
});

test("hostile links give a clear error and the page keeps working", async () => {
  assert.ok(exampleLink, "needs the example's link");
  const payload = payloadOf(exampleLink);
  const base = origin + "/#r=";

  const truncated = await openHostile(base + "1." + payload.slice(0, Math.floor(payload.length / 2)));
  assert.match(truncated.message, /damaged or incomplete|invalid report/);

  // Flip one bit of the payload's middle character (still base64url).
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const mid = Math.floor(payload.length / 2);
  const flipped = payload.slice(0, mid) + alphabet[alphabet.indexOf(payload[mid]) ^ 1] + payload.slice(mid + 1);
  const bitFlip = await openHostile(base + "1." + flipped);
  assert.match(bitFlip.message, /damaged or incomplete|invalid report/);

  const newer = await openHostile(base + "9." + payload);
  assert.match(newer.message, /newer oomscope/);

  // 16 MiB of zeros deflate to a few KB: a decompression bomb.
  const bomb = zlib.deflateSync(Buffer.alloc(16 << 20)).toString("base64url");
  const bombed = await openHostile(base + "1." + bomb);
  assert.match(bombed.message, /expands to more than/);

  const huge = await openHostile(base + "1." + "A".repeat(300_000));
  assert.match(huge.message, /longer than any oomscope link/);

  // The page still works: the drop zone is there, the example loads on
  // request, and a good link set by hand (hashchange) opens.
  const page = huge.page;
  assert.ok(await page.locator("#file-input").count(), "the drop zone stays usable");
  await page.screenshot({ path: path.join(OUT, "share-hostile.png") });
  await page.evaluate((hash) => (window.location.hash = hash), exampleLink.slice(exampleLink.indexOf("#")));
  await page.locator(".shared-banner").waitFor({ timeout: TIMEOUT });
  assert.deepEqual(await verdictNumbers(page), exampleNumbers);
  await page.click("text=Show the example");
  await page.locator(".example-banner:not(.shared-banner)").waitFor({ timeout: TIMEOUT });
});

test("strings in a link are shown as text, never run", async () => {
  const page = await freshPage();
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.locator(".example-banner").waitFor({ timeout: TIMEOUT });
  const log = fs.readFileSync(path.join(CORPUS, "logs/01_tpu_compile_hbm.txt"));
  await page.setInputFiles("#file-input", { name: HOSTILE_NAME, mimeType: "text/plain", buffer: log });
  await page.locator(".verdict-where", { hasText: HOSTILE_NAME }).waitFor({ timeout: TIMEOUT });
  const link = await copyLink(page);
  console.log(`# corpus log 01 link: ${link.length} characters`);

  const shared = await freshPage();
  await shared.goto(link, { timeout: TIMEOUT });
  await shared.locator(".shared-banner").waitFor({ timeout: TIMEOUT });
  assert.equal((await shared.locator(".shared-inputs").textContent()).trim(), HOSTILE_NAME);
  assert.equal(await shared.locator(".report img").count(), 0, "no element made from a carried string");
  assert.equal(await shared.evaluate(() => window.__xss), undefined, "no script ran");
  await shared.screenshot({ path: path.join(OUT, "share-script-text.png") });
});

test("a dropped PyTorch snapshot travels with the link: the receiver sees the same peak and OOM", async () => {
  // The corpus's snapshot whose trace holds an OOM (device 1 of 3).
  const name = "Constructor-Sun__code_location__memory_snapshot.pickle";
  const page = await freshPage();
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.locator(".example-banner").waitFor({ timeout: TIMEOUT });
  await dropFiles(page, [{ name, path: path.join(CORPUS, "snapshots", name) }]);
  await page.locator('[data-testid="memory-snapshot"]').first().waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
  // What a reader compares, per device: the title, the peak, the verdict's
  // and the OOM's words and numbers, and whether a curve is drawn.
  const numbers = (p) =>
    p.locator('[data-testid="memory-snapshot"]').evaluateAll((views) =>
      views.map((v) => ({
        title: v.querySelector("h3").textContent,
        peak: Number(v.querySelector('[data-testid="snapshot-peak"] .bytes').dataset.bytes),
        verdict: v.querySelector('[data-testid="snapshot-verdict"]').textContent,
        oom: [...v.querySelectorAll('[data-testid="snapshot-oom"] .bytes')].map((b) => Number(b.dataset.bytes)),
        oomText: v.querySelector('[data-testid="snapshot-oom"]')?.textContent ?? null,
        curve: v.querySelectorAll('[data-testid="snapshot-curve"] path.allocated').length,
      })),
    );
  const sent = await numbers(page);
  assert.equal(sent.length, 3, "three devices");
  assert.equal(sent.filter((d) => d.oom.length).length, 1, "one device has the OOM");
  const link = await copyLink(page);
  console.log(`# snapshot link: ${link.length} characters`);
  assert.ok(link.length <= 4096 + origin.length + 2, "the snapshot link fits the 4 KB budget");

  const shared = await freshPage();
  await shared.goto(link, { timeout: TIMEOUT });
  await shared.locator(".shared-banner").waitFor({ timeout: TIMEOUT });
  await shared.locator('[data-testid="memory-snapshot"]').nth(sent.length - 1).waitFor({ timeout: TIMEOUT });
  assert.deepEqual(await numbers(shared), sent);
  // The page says what the link left out of the snapshot.
  const note = await shared.locator('#snapshots [data-testid="shared-runtime-note"]').textContent({ timeout: TIMEOUT });
  assert.match(note, /^The link carries only: curves of at most 200 points/);
  await shared.locator("#snapshots").screenshot({ path: path.join(OUT, "share-snapshot-opened.png") });
});

test("a dropped JAX device memory profile travels with the link: the same devices and bytes", async () => {
  const file = path.join(ROOT, "fixtures/jax-memory-profiles/sharded_8dev.prof");
  const page = await freshPage();
  await page.goto(origin + "/", { timeout: TIMEOUT });
  await page.locator(".example-banner").waitFor({ timeout: TIMEOUT });
  await dropFiles(page, [{ name: "sharded_8dev.prof", path: file }]);
  await page.locator('[data-testid="device-memory-profile"]').first().waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
  const numbers = (p) =>
    p.locator('[data-testid="device-memory-profile"]').evaluateAll((views) =>
      views.map((v) => [...v.querySelectorAll(".runtime-device .bytes")].map((b) => Number(b.dataset.bytes))),
    );
  const sent = await numbers(page);
  assert.ok(sent.length >= 1 && sent[0].length === 8, JSON.stringify(sent));
  const link = await copyLink(page);
  console.log(`# JAX profile link: ${link.length} characters`);
  const shared = await freshPage();
  await shared.goto(link, { timeout: TIMEOUT });
  await shared.locator(".shared-banner").waitFor({ timeout: TIMEOUT });
  await shared.locator('[data-testid="device-memory-profile"]').first().waitFor({ timeout: TIMEOUT });
  assert.deepEqual(await numbers(shared), sent);
});

test("no request left the page's origin, and no page error", () => {
  assert.deepEqual(foreignRequests, []);
  assert.deepEqual(pageErrors, []);
});
