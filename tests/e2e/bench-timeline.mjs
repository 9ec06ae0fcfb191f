// Frame-time benchmark of the buffer-lifetime timeline with 200,000 buffers
// in headless Chromium. Not a test: it prints numbers.
//
//   node bench-timeline.mjs [--buffers N] [--frames N]
//
// It synthesises a report (one module, N buffers at non-overlapping
// compiler-style offsets: 2,000 address lanes, each reused by ~100 buffers
// in turn, sizes from 4 KiB to 256 MiB, plus long-lived ones), serves it
// beside the built page (OOMSCOPE_DIST, default dist/ from `trunk build
// --release`) and shows it through the page's test hook
// `window.__oomscope_load_report(json)`. Then, for each zoom level, it drags
// the chart with pointer events dispatched once per animation frame and
// records (a) the interval between animation frames and (b) the time the
// page spent drawing each frame (the canvas's `data-draw-ms`). It prints
// median and p95 of both, and the load time (JSON parse + index build +
// first frame).

import path from "node:path";
import { fileURLToPath } from "node:url";
import { launchChromium, serveDist } from "./lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const DIST = path.resolve(process.env.OOMSCOPE_DIST || path.join(ROOT, "dist"));
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const BUFFERS = arg("--buffers", 200_000);
const FRAMES = arg("--frames", 120);

/** A deterministic pseudo-random generator (mulberry32). */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function synthesise(count) {
  const rand = random(42);
  const lanes = 2000;
  const perLane = Math.ceil(count / lanes);
  const positions = perLane * 40;
  const categories = ["temporary", "temporary", "temporary", "output", "parameter"];
  const ops = ["dot_general", "add", "mul", "reduce_sum", "transpose", "exp", "select_n", "concatenate", "convert_element_type", "broadcast_in_dim", "dynamic_slice", "scan"];
  const buffers = [];
  const delta = new Float64Array(positions + 1);
  let offset = 0;
  for (let lane = 0; lane < lanes && buffers.length < count; lane++) {
    const laneBytes = Math.round(4096 * 2 ** (rand() * 16));
    let t = Math.floor(rand() * 40);
    for (let k = 0; k < perLane && buffers.length < count; k++) {
      const length = 1 + Math.floor(rand() * rand() * 60);
      const start = t;
      const end = Math.min(positions - 1, start + length);
      if (start >= positions - 1) break;
      const size = Math.max(512, Math.round(laneBytes * (0.3 + 0.7 * rand())));
      const i = buffers.length;
      buffers.push({
        id: i,
        name: `fusion.${i}`,
        shape: `f32[${Math.max(1, Math.round(size / 4096))},1024]{1,0:T(8,128)}`,
        size_bytes: size,
        unpadded_bytes: Math.round(size * 0.9),
        start,
        end,
        category: categories[i % categories.length],
        op_name: `jit(train_step)/layer_${lane % 48}/${ops[i % ops.length]}`,
        source: `model.py:${100 + (i % 400)}`,
        opcode: "fusion",
        offset_bytes: offset,
      });
      delta[start] += size;
      delta[end + 1] -= size;
      t = end + 1 + Math.floor(rand() * 20);
    }
    offset += laneBytes;
  }
  const heap = [];
  let running = 0;
  let peak = 0;
  let peakAt = 0;
  for (let p = 0; p < positions; p++) {
    running += delta[p];
    heap.push(running);
    if (running > peak) {
      peak = running;
      peakAt = p;
    }
  }
  const module = {
    name: "synthetic_200k",
    memory_space: 0,
    source_kind: "hlo_proto",
    input: "synthetic.hlo.pb",
    peak_kind: "heap_simulator",
    peak_bytes: peak,
    peak_unpadded_bytes: Math.round(peak * 0.9),
    peak_position: peakAt,
    heap_bytes: heap,
    unpadded_heap_bytes: heap.map((h) => Math.round(h * 0.9)),
    peak_buffers: [],
    parameters_bytes: 0,
    maybe_live_out_bytes: 0,
    total_allocation_bytes: offset,
    buffers,
    instructions: Array.from({ length: positions }, (_, p) => `op.${p}`),
  };
  return {
    schema: 1,
    inputs: [{ name: "synthetic.hlo.pb", kind: "hlo_proto", size_bytes: 0 }],
    oom_events: [],
    modules: [module],
    step_series: [],
    diagnosis: { tree: "none", path: [], nodes: [] },
    errors: [],
  };
}

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};

const report = JSON.stringify(synthesise(BUFFERS));
const { server, origin } = await serveDist(DIST, (req, res) => {
  if (new URL(req.url, "http://localhost").pathname !== "/__bench/report.json") return false;
  res.writeHead(200, { "content-type": "application/json" }).end(report);
  return true;
});
const browser = await launchChromium();
try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  page.on("pageerror", (e) => console.error("page error:", String(e)));
  await page.goto(origin + "/");
  await page.locator(".verdict").waitFor({ timeout: 120_000 });
  const loadMs = await page.evaluate(async () => {
    const json = await (await fetch("/__bench/report.json")).text();
    const t0 = performance.now();
    const error = window.__oomscope_load_report(json);
    if (error) throw new Error(error);
    for (;;) {
      const canvas = document.querySelector(".timeline-canvas[data-bands-drawn]");
      if (canvas) return performance.now() - t0;
      await new Promise((r) => setTimeout(r, 10));
    }
  });
  const canvas = page.locator(".timeline-canvas");
  await canvas.scrollIntoViewIfNeeded();
  const buffers = await page.locator(".timeline-head .muted").textContent();
  console.log(`synthetic report: ${BUFFERS} buffers (${(report.length / 2 ** 20).toFixed(1)} MiB JSON); page shows "${buffers.trim()}"`);
  console.log(`load (parse + index + first frame): ${loadMs.toFixed(0)} ms`);

  for (const [label, zoomIns] of [["whole program", 0], ["1/4 of the program", 4], ["1/40 of the program", 10]]) {
    await canvas.focus();
    await page.keyboard.press("f");
    for (let i = 0; i < zoomIns; i++) await page.keyboard.press("w");
    await page.waitForTimeout(200);
    const result = await page.evaluate(async (frames) => {
      const canvas = document.querySelector(".timeline-canvas");
      const rect = canvas.getBoundingClientRect();
      const y = rect.top + 120;
      let x = rect.left + rect.width * 0.8;
      const fire = (type, cx) =>
        canvas.dispatchEvent(new PointerEvent(type, { bubbles: true, clientX: cx, clientY: y, button: 0, buttons: 1, pointerId: 1, isPrimary: true }));
      fire("pointerdown", x);
      const intervals = [];
      const draws = [];
      const bands = [];
      let last = null;
      let direction = -1;
      await new Promise((resolve) => {
        const tick = (now) => {
          if (last !== null) {
            intervals.push(now - last);
            draws.push(Number(canvas.dataset.drawMs));
            bands.push(Number(canvas.dataset.bandsDrawn));
          }
          last = now;
          if (intervals.length >= frames) return resolve();
          x += direction * 6;
          if (x < rect.left + rect.width * 0.15 || x > rect.left + rect.width * 0.85) direction = -direction;
          fire("pointermove", x);
          requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
      });
      fire("pointerup", x);
      return { intervals, draws, bands, range: [canvas.dataset.x0, canvas.dataset.x1] };
    }, FRAMES);
    const med = quantile(result.intervals, 0.5);
    console.log(
      `${label.padEnd(20)} frame interval median ${med.toFixed(1)} ms (${(1000 / med).toFixed(0)} fps), p95 ${quantile(result.intervals, 0.95).toFixed(1)} ms; ` +
        `draw median ${quantile(result.draws, 0.5).toFixed(1)} ms, p95 ${quantile(result.draws, 0.95).toFixed(1)} ms; ` +
        `bands drawn median ${quantile(result.bands, 0.5)}`,
    );
  }
} finally {
  await browser.close();
  server.close();
}
