// Browser test of the buffer timeline on XLA dump text (issue 29): the same
// train step as presentation.test.mjs (fixtures/pair-donate/plain: 8 weights
// of 1 GiB, a 64 MiB batch, their 8 updated copies), dropped as its dump
// text only (HLO, buffer assignment, live ranges, memory-usage report, the
// compile log), no HloProto. The dump's live ranges give each parameter a
// lifetime, yet its memory is held for the whole program: the chart draws
// the parameters as whole-program bands from 0, largest first, and the
// updated weights the step returns above them, as it does for an HloProto,
// not packed among the temporaries.
//
// The expected parameters come from the fixture's own buffer-assignment
// text (allocations marked `parameter`).

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { OUT, REPOSITORY, dropFiles, exampleSuite, timelineBufferAt, timelineFrame } from "./lib.mjs";

const TRAIN = path.join(REPOSITORY, "fixtures/pair-donate/plain");
const PREFIX = "module_0000.jit_sgd_step.cl_1014260217";
const TIMEOUT = 60_000;
const MIB = 2 ** 20;

const opened = exampleSuite(TIMEOUT);

/** The entry parameters the buffer assignment lists: `allocation N: size S, parameter P, ...` then its value's name. */
function parametersOfBufferAssignment() {
  const text = fs.readFileSync(path.join(TRAIN, `${PREFIX}.after_optimizations-buffer-assignment.txt`), "utf8");
  const out = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const m = lines[i].match(/^allocation \d+: size (\d+),.* parameter \d+/);
    if (!m) continue;
    const value = (lines[i + 1] || "").match(/value: <\d+ ([^ @]+)/);
    if (value) out.push({ name: value[1], bytes: Number(m[1]) });
  }
  return out;
}

test("a dump's parameters are whole-program bands from 0, largest first, under the temporaries", async () => {
  const { page } = opened;
  const names = fs.readdirSync(TRAIN).filter((n) => n.endsWith(".txt") || n === "compile.log");
  assert.ok(!names.some((n) => n.endsWith(".pb")));
  await dropFiles(page, names.map((name) => ({ name, path: path.join(TRAIN, name) })));
  await page.locator(".timeline-canvas[data-x1]").waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });

  const parameters = parametersOfBufferAssignment().sort((a, b) => b.bytes - a.bytes);
  const weights = parameters.filter((p) => p.bytes === 1024 * MIB);
  assert.equal(weights.length, 8, `the 8 weights: ${JSON.stringify(parameters)}`);
  const f = await timelineFrame(page);
  // Early, middle and late in the program, the first GiB from 0 is a
  // weight (the largest parameters are stacked first), and so is the band
  // just under 8 GiB: the eight weights fill [0, 8 GiB) at every position.
  for (const at of [0.1, 0.5, 0.9]) {
    const position = f.x0 + at * (f.x1 - f.x0);
    for (const bytes of [512 * MIB, 8 * 1024 * MIB - 256 * MIB]) {
      const name = await timelineBufferAt(page, position, bytes, TIMEOUT);
      assert.ok(weights.some((w) => w.name === name), `a weight at ${bytes / MIB} MiB, ${Math.round(at * 100)}% into the program: ${name}`);
      assert.match(await page.locator(".timeline-tooltip").textContent(), /whole program/);
    }
  }
  // Above all parameters (8 GiB + 64 MiB), the updated weights the step
  // returns, for the whole program too: the outputs paired with them.
  const paramBytes = parameters.reduce((sum, p) => sum + p.bytes, 0);
  const middle = (f.x0 + f.x1) / 2;
  const output = await timelineBufferAt(page, middle, paramBytes + 512 * MIB, TIMEOUT);
  assert.match(output, /^fusion(\.\d+)?$/, `an updated weight above the parameters: ${output}`);
  assert.match(await page.locator(".timeline-tooltip").textContent(), /whole program/);
  await page.mouse.move(0, 0);
  await page.locator("section.timeline .timeline-stage").screenshot({ path: path.join(OUT, "timeline-dump-train-step.png") });
  assert.deepEqual(opened.pageErrors, []);
});
