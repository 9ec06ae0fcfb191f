// Shared by the browser tests: serving the trunk-built page on 127.0.0.1.

import fs from "node:fs";
import path from "node:path";

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
