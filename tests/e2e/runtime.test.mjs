// Browser test of the run-time view (app/src/views/runtime/) and the
// headline on JAX device memory profiles: the three real profiles of the
// leaking loop (fixtures/jax-memory-profiles/leak/, made by
// tools/fixtures/jax_memory_profiles.py, JAX on 8 CPU devices), dropped
// together as a user would. They are one series; the stack whose bytes grow
// is named with its source line (`state = step(state)`, line 86 of the
// generator), and the answer at the top says so.

import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { OUT, REPOSITORY, dropProfiles, exampleSuite, lineOf } from "./lib.mjs";

const LEAK = path.join(REPOSITORY, "fixtures/jax-memory-profiles/leak");
const GENERATOR = path.join(REPOSITORY, "tools/fixtures/jax_memory_profiles.py");
const TIMEOUT = 60_000;

const opened = exampleSuite(TIMEOUT);

test("a dropped series of leaking JAX profiles names the growing line, in the series and in the answer", async () => {
  const { page } = opened;
  await dropProfiles(page, LEAK, 3);
  const series = page.locator('[data-testid="device-memory-series"]');
  await series.waitFor({ timeout: TIMEOUT });

  // The line the generator leaks from, read from the generator itself.
  const leakLine = lineOf(GENERATOR, (l) => l.trim() === "state = step(state)");
  const where = `jax_memory_profiles.py:${leakLine}`;

  const status = await series.locator('[role="status"]').textContent();
  assert.ok(status.includes(where), `series names ${where}: ${status}`);
  assert.match(status, /grow by [\d.]+ MiB/, `growth over the series: ${status}`);

  const headline = page.locator(".verdict-headline").first();
  assert.equal(await headline.getAttribute("data-node"), "runtime.device_accumulation");
  const answer = await headline.locator(".verdict-answer").textContent();
  assert.ok(answer.includes(where) && answer.includes("20.00 MiB"), `answer: ${answer}`);

  // The verdict never says the inputs hold nothing about memory (issue 20).
  assert.equal(await page.getByText("Nothing in these inputs describes memory use").count(), 0);

  await page.screenshot({ path: path.join(OUT, "runtime-leak-series.png"), fullPage: false });
  assert.deepEqual(opened.pageErrors, []);
  assert.deepEqual(opened.cspViolations, []);
});
