// Takes the README's screenshots of the charts (docs/screenshots/) from the
// built page, on real inputs: the buffer timeline of a train step with its
// parameters and outputs (fixtures/pair-donate/plain, its HloProto and its
// dump text), the snapshot curve and the PyTorch memory timeline (corpus),
// the run-time areas of a Kineto trace (corpus) and the JAX device bars.
// Not a test: `node tests/e2e/screenshots.mjs` after `trunk build --release`.

import fs from "node:fs";
import path from "node:path";
import { REPOSITORY, DIST, corpusDir, dropFiles, openExamplePage } from "./lib.mjs";

const SHOTS = path.join(REPOSITORY, "docs/screenshots");
const TRAIN = path.join(REPOSITORY, "fixtures/pair-donate/plain");
const CORPUS = corpusDir();
const TIMEOUT = 60_000;

/** Drops `files` on a fresh example page, waits for `selector`, screenshots it (the sticky header out of the way). */
async function shoot(name, files, selector, pick = (l) => l.first()) {
  const opened = await openExamplePage(DIST, TIMEOUT);
  const { page } = opened;
  try {
    await dropFiles(page, files.map((file) => ({ name: path.basename(file), path: file })));
    const target = pick(page.locator(selector));
    await target.waitFor({ timeout: TIMEOUT });
    await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
    await page.evaluate(() => {
      const header = document.querySelector(".page-header");
      if (header) header.style.position = "static";
    });
    await target.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await target.screenshot({ path: path.join(SHOTS, name) });
    if (opened.pageErrors.length) throw new Error(`${name}: ${opened.pageErrors}`);
    console.log(`${name}: ${fs.statSync(path.join(SHOTS, name)).size} bytes`);
  } finally {
    await opened.close();
  }
}

fs.mkdirSync(SHOTS, { recursive: true });
const train = (f) => fs.readdirSync(TRAIN).filter(f).map((n) => path.join(TRAIN, n));
await shoot("timeline-train-step.png", train((n) => n.endsWith(".hlo.pb") || n === "compile.log"), "section.timeline .timeline-stage");
await shoot("timeline-train-step-table.png", train((n) => n.endsWith(".hlo.pb") || n === "compile.log"), "section.timeline");
await shoot("timeline-dump-train-step.png", train((n) => n.endsWith(".txt") || n === "compile.log"), "section.timeline .timeline-stage");
await shoot(
  "snapshot-curve.png",
  [path.join(CORPUS, "snapshots/Constructor-Sun__code_location__memory_snapshot.pickle")],
  '[data-testid="memory-snapshot"]',
  (l) => l.filter({ has: l.page().locator('[data-testid="snapshot-oom"]') }).first().locator('[data-testid="snapshot-curve"]'),
);
await shoot(
  "runtime-timeline.png",
  [path.join(CORPUS, "runtime/tonghuikang__optimizer-memory-profiles__profiling__modal_gpu_adam__profile.raw.json.gz")],
  '[data-testid="memory-timeline"]',
);
await shoot(
  "runtime-areas-kineto.png",
  [path.join(CORPUS, "runtime/pytorch__kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz")],
  '[data-testid="memory-timeline"]',
);
await shoot("device-bars.png", [path.join(REPOSITORY, "fixtures/jax-memory-profiles/sharded_8dev.prof")], '[data-testid="device-memory-profile"]');
