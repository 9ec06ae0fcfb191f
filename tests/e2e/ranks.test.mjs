// Browser test of the ranks view (app/src/views/ranks/): the 12 real JAX
// device memory profiles of a 4-process job in which rank 2 leaks
// (fixtures/ranks-jax/leak/, made by tools/fixtures/jax_ranks.py), dropped
// together as a user would. The page shows four ranks, the median marked,
// rank 2 shaded and named as growing by 1.00 MiB per step at the
// generator's own `history.append(...)` line, and a row click selects a rank.
// The page lists what it recognised in each file; correcting a file's rank
// regroups the ranks at once (no file read again), and putting it back gives
// the analysis of the files again. Real snapshots dropped together are
// analysed one per worker (a pool, a fresh worker per file) and combined
// into the ranks view. A real log of two NPU ranks with times names the
// rank that failed first.

import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import fs from "node:fs";
import { OUT, REPOSITORY, corpusDir, dropFiles, dropProfiles, exampleSuite, lineOf } from "./lib.mjs";

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

test("what was recognised in each file is listed, and a corrected rank regroups at once", async () => {
  const { page } = opened;
  // Continues on the leak set dropped above.
  const section = page.locator("#ranks");
  const files = section.locator(".rank-files");
  await files.locator("summary").click();
  const rows = files.locator("tbody tr");
  assert.equal(await rows.count(), 12);
  const first = files.locator('tr[data-input="process_2_step_000020.prof"]');
  assert.equal(await first.locator('input[data-field="rank"]').inputValue(), "2");
  assert.equal(await first.locator('input[data-field="step"]').inputValue(), "20");
  assert.equal((await first.locator('[data-field="how"]').textContent()).trim(), "the file or folder name");
  const growth = section.locator('.rank-finding[data-kind="growth"][data-rank="2"]');
  const before = await growth.textContent();

  // The user says this profile is rank 4's: five ranks, rank 4 set by them.
  await first.locator('input[data-field="rank"]').fill("4");
  await first.locator('input[data-field="rank"]').dispatchEvent("change");
  const table = section.locator(".ranks-table tbody tr");
  await section.locator('.ranks-table tr[data-rank="4"]').waitFor({ timeout: TIMEOUT });
  assert.equal(await table.count(), 5);
  const grouped = await section.locator('.rank-note[data-kind="grouped"]').first().textContent();
  assert.ok(grouped.includes("(1 set by you)"), grouped);
  const moved = files.locator('tr[data-input="process_2_step_000020.prof"]');
  assert.equal((await moved.locator('[data-field="how"]').textContent()).trim(), "you");

  // Back to rank 2: four ranks and the same finding as the files gave.
  await moved.locator('input[data-field="rank"]').fill("2");
  await moved.locator('input[data-field="rank"]').dispatchEvent("change");
  await section.locator('.ranks-table tr[data-rank="4"]').waitFor({ state: "detached", timeout: TIMEOUT });
  assert.equal(await table.count(), 4);
  assert.equal(await growth.textContent(), before);
  await page.screenshot({ path: path.join(OUT, "ranks-corrected.png"), fullPage: false });
  assert.deepEqual(opened.pageErrors, []);
});

test("snapshots dropped together are analysed one per worker and combined", async (t) => {
  const { page } = opened;
  const dir = path.join(corpusDir(), "snapshots");
  const sources = [
    "NiuHuangxiaozi__assignment2-systems__cs336_systems__profile_memory__forward_and_backward_memory_snapshot_100.pickle",
    "NiuHuangxiaozi__assignment2-systems__cs336_systems__profile_memory__forward_and_backward_memory_snapshot_150.pickle",
    "NiuHuangxiaozi__assignment2-systems__cs336_systems__profile_memory__forward_and_backward_memory_snapshot_200.pickle",
  ];
  if (!fs.existsSync(path.join(dir, sources[0]))) {
    t.skip("corpus snapshots not found");
    return;
  }
  // Workers started by the page from now on: the pool's.
  let started = 0;
  const count = () => started++;
  page.on("worker", count);
  await dropFiles(page, sources.map((s, i) => ({ name: `rank${i}.pickle`, path: path.join(dir, s) })));
  const section = page.locator("#ranks");
  await section.locator('.ranks-table tr[data-rank="2"]').waitFor({ timeout: TIMEOUT });
  await page.locator("section.progress").waitFor({ state: "detached", timeout: TIMEOUT });
  page.off("worker", count);
  // A fresh worker per file (a worker's memory never shrinks).
  assert.equal(started, sources.length);
  assert.equal(await section.locator(".ranks-table tbody tr").count(), 3);
  assert.equal(await page.locator("table.inputs .error-message").count(), 0);
  const peaks = await section.locator('.ranks-table [data-field="peak"]').allTextContents();
  // Three different real snapshots: three different peaks.
  assert.equal(new Set(peaks).size, 3, JSON.stringify(peaks));
  assert.deepEqual(opened.pageErrors, []);
});

test("a real log of two NPU ranks names the first to fail and its time", async () => {
  const { page } = opened;
  const log = path.join(REPOSITORY, "fixtures/ranks-logs/npu_2ranks_times.log");
  await dropFiles(page, [{ name: "npu_2ranks_times.log", path: log }]);
  const finding = page.locator('#ranks .rank-finding[data-kind="oom_first"]');
  await finding.waitFor({ timeout: TIMEOUT });
  assert.equal(await finding.getAttribute("data-rank"), "1");
  const text = await finding.textContent();
  assert.ok(text.includes("06-15 21:49:22.056172510"), text);
  assert.ok(text.includes("rank 2 next at 06-15 21:49:22.125325668"), text);
  assert.equal(await page.locator('#ranks .rank-oom[data-ranks="1,2"]').count(), 1);
  assert.deepEqual(opened.pageErrors, []);
});
