// Time of the What-if panel's replay in the browser's worker, on a module
// of about 10^5 buffers. Not a test: it prints numbers.
//
//   LAYERS=3000 OUT=/tmp/big python3 tools/fixtures/big_module.py
//   node bench-whatif.mjs /tmp/big/module_0000.jit_train_step.*.after_optimizations.hlo.pb
//
// It picks the HloProto on the built page (OOMSCOPE_DIST, default dist/ from
// `trunk build --release`), waits for the panel, then toggles remedies one
// after the other and prints the round trip the panel measures (page → worker
// → replay of every single remedy and the combination → page), which is
// what the user waits for.

import path from "node:path";
import { fileURLToPath } from "node:url";
import { launchChromium, serveDist } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.resolve(process.env.OOMSCOPE_DIST || path.join(ROOT, "dist"));
const FILE = process.argv[2];
const TIMEOUT = 600_000;

const { server, origin } = await serveDist(DIST);
const browser = await launchChromium();
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
await page.goto(origin + "/");
await page.locator(".example-banner").waitFor({ timeout: 60_000 });
const t0 = Date.now();
// The file picker, as a user picks it: a 100 MB HloProto sent through
// page.evaluate (dropFiles) closes the page.
await page.setInputFiles("#file-input", FILE);
const panel = page.locator("#modules .what-if");
await panel.locator(".what-if-time").waitFor({ timeout: TIMEOUT });
console.log(`analysis and first panel: ${Date.now() - t0} ms; first replay (singles only): ${await panel.locator(".what-if-time").getAttribute("data-ms")} ms`);
// What the module view says it holds (the timeline's count of heap buffers).
const counted = (await page.locator("#modules").textContent()).match(/([\d,]+) buffers ·/);
console.log(`module: ${counted ? counted[1] : "?"} buffers in the timeline`);
for (const remedy of ["donation", "bf16", "batch", "remat"]) {
  const box = panel.locator(`input[type="checkbox"][data-remedy="${remedy}"]`);
  if (await box.isDisabled()) {
    console.log(`${remedy}: does not apply`);
    continue;
  }
  const before = await panel.locator(".what-if-time").getAttribute("data-ms");
  await box.check();
  await page.waitForFunction(
    ([r]) => document.querySelector("#modules .what-if-outcome")?.textContent.includes(r),
    [remedy],
    { timeout: TIMEOUT },
  ).catch(() => {});
  console.log(`+ ${remedy}: replayed in the worker in ${await panel.locator(".what-if-time").getAttribute("data-ms")} ms (previous ${before} ms)`);
}
await browser.close();
server.close();
