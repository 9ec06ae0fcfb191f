// Browser test of the ranks view (app/src/views/ranks/): the 12 real JAX
// device memory profiles of a 4-process job in which rank 2 leaks
// (fixtures/ranks-jax/leak/, made by tools/fixtures/jax_ranks.py), dropped
// together as a user would. The page shows four ranks, the median marked,
// rank 2 shaded and named as growing by 1.00 MiB per step at the
// generator's own `history.append(...)` line, and a row click selects a rank.

import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { OUT, REPOSITORY, dropProfiles, exampleSuite, lineOf } from "./lib.mjs";

const LEAK = path.join(REPOSITORY, "fixtures/ranks-jax/leak");
const GENERATOR = path.join(REPOSITORY, "tools/fixtures/jax_ranks.py");
const TIMEOUT = 60_000;

const opened = exampleSuite(TIMEOUT);

test("four ranks of a JAX job: the leaking rank is named with its line", async () => {
  const { page } = opened;
  await dropProfiles(page, LEAK, 12);
  const section = page.locator("#ranks");
  await section.waitFor({ timeout: TIMEOUT });

  const rows = section.locator(".ranks-table tbody tr");
  assert.equal(await rows.count(), 4);
  assert.equal(await section.locator(".ranks-table tr.median").count(), 1);
  const leaking = section.locator('.ranks-table tr[data-rank="2"]');
  assert.ok((await leaking.getAttribute("class")).includes("differs"));
  assert.equal((await leaking.locator('[data-field="growth"]').textContent()).trim(), "1.00 MiB");

  const leakLine = lineOf(GENERATOR, (l) => l.includes("history.append(state"));
  const finding = section.locator('.rank-finding[data-kind="growth"][data-rank="2"]');
  const text = await finding.textContent();
  assert.ok(text.includes(`jax_ranks.py:${leakLine}`), text);
  assert.ok(text.includes("1.00 MiB per step"), text);

  await leaking.click();
  assert.ok((await leaking.getAttribute("class")).includes("selected"));
  assert.equal(await section.locator("canvas").count(), 1);

  await page.screenshot({ path: path.join(OUT, "ranks-leak.png"), fullPage: false });
  assert.deepEqual(opened.pageErrors, []);
  assert.deepEqual(opened.cspViolations, []);
});
