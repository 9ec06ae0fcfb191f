// oomscope's service worker: after the first visit the page opens and
// analyses files with no network at all.
//
// - Versioned assets (trunk's hashed file names) never change under their
//   name: served from the cache, fetched once.
// - The page itself and the unversioned files (boot.js, the worker, whose
//   names trunk does not hash) come from the network when it answers, and
//   from the cache otherwise.
// - Each fresh copy of the page names the assets it needs; cached versioned
//   assets it no longer names are deleted.
// - Installing caches what shows the page (the page, its versioned assets,
//   boot.js), not the analysis worker: a visit that never drops a file
//   never downloads the analyzer (about 1.2 MB gzipped). The worker's files
//   are cached the first time the page asks for them (the first drop, drag
//   or opened link), like every unversioned file, and work offline from then on.
"use strict";

const CACHE = "oomscope";
/** What the page needs to show itself, cached on install. */
const UNVERSIONED = ["./", "./boot.js"];
const VERSIONED = /-[0-9a-f]{8,16}(_bg)?\.[a-z0-9]+$/;

function scopeUrl(path) {
  return new URL(path, self.registration.scope).href;
}

// Same-origin asset URLs an index.html refers to.
function assetsOf(html) {
  const urls = new Set();
  for (const match of html.matchAll(/(?:href|src|data-js|data-wasm)="([^"]+)"/g)) {
    const url = new URL(match[1], self.registration.scope);
    if (url.origin === self.location.origin && url.pathname !== "/" && VERSIONED.test(url.pathname)) {
      urls.add(url.href);
    }
  }
  return urls;
}

async function pruneTo(cache, wanted) {
  for (const request of await cache.keys()) {
    const path = new URL(request.url).pathname;
    if (VERSIONED.test(path) && !wanted.has(request.url)) {
      await cache.delete(request);
    }
  }
}

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    const page = await fetch(scopeUrl("./"), { cache: "no-cache" });
    const html = await page.clone().text();
    await cache.put(scopeUrl("./"), page);
    const urls = [...assetsOf(html), ...UNVERSIONED.slice(1).map(scopeUrl)];
    await Promise.allSettled(urls.map((url) => cache.add(new Request(url, { cache: "no-cache" }))));
    await self.skipWaiting();
  })());
});

self.addEventListener("activate", (event) => {
  event.waitUntil(self.clients.claim());
});

async function cacheFirst(request) {
  const cache = await caches.open(CACHE);
  const cached = await cache.match(request);
  if (cached) return cached;
  const response = await fetch(request);
  if (response.ok) await cache.put(request, response.clone());
  return response;
}

// The response goes back as soon as it starts arriving; its copy is cached
// beside it (`keep`: the fetch event's waitUntil). Caching first held the
// worker's wasm until all of it was written to the cache, so the worker's
// streaming compile could not start before (issue 28).
async function networkFirst(request, cacheKey, keep) {
  const cache = await caches.open(CACHE);
  try {
    const response = await fetch(request);
    if (response.ok) {
      const copy = response.clone();
      const page = cacheKey === scopeUrl("./") ? response.clone() : null;
      keep((async () => {
        await cache.put(cacheKey, copy);
        if (page) await pruneTo(cache, assetsOf(await page.text()));
      })());
    }
    return response;
  } catch (offline) {
    const cached = await cache.match(cacheKey);
    if (cached) return cached;
    throw offline;
  }
}

self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== self.location.origin) return;
  // Called while respondWith's promise is pending, so the event still
  // accepts it; should a browser refuse, the caching runs on regardless.
  const keep = (promise) => {
    try {
      event.waitUntil(promise);
    } catch {
      promise.catch(() => {});
    }
  };
  if (request.mode === "navigate") {
    event.respondWith(networkFirst(request, scopeUrl("./"), keep));
  } else if (VERSIONED.test(url.pathname)) {
    event.respondWith(cacheFirst(request));
  } else {
    event.respondWith(networkFirst(request, request.url, keep));
  }
});
