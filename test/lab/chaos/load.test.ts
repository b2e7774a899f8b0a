import { suite } from "uvu";
import * as assert from "uvu/assert";
import { settings } from "../../../lab/chaos/config.ts";
import { bigDemand, hugeDemand, loadRun, planLoads } from "../../../lab/chaos/load.ts";

const Load = suite("planLoads()");
const MB = 1024 * 1024;

Load("planLoads() asks of the 1 MB and 64 MB faults the stated fraction of the drain, never more", () => {
  // 200 MB/s drained by 4 connections, half of it for the faults: 25 MB per worker per second, 100 MB/s in all.
  const plan = planLoads(200 * MB, 0.5, 4, 3000);
  assert.is(plan.bigGets, 24); // and the cached get
  assert.is(plan.bigEveryMs, 1000);
  assert.is(bigDemand(plan, 4), 100 * MB);
  // 64 MB at 100 MB/s: 640 ms, so the 64 MB value keeps its once a second.
  assert.is(plan.hugeEveryMs, 1000);
  assert.ok(plan.bigFits && plan.hugeFits);
  // A loaded machine: 8 MB/s drained, 4 MB/s for the faults: the smallest burst (2 MB a worker) every 2 s.
  const loaded = planLoads(8 * MB, 0.5, 4, 3000);
  assert.is(loaded.bigGets, 1);
  assert.is(loaded.bigEveryMs, 2000);
  assert.is(bigDemand(loaded, 4), 4 * MB);
  assert.is(loaded.hugeEveryMs, 16_000);
  assert.ok(hugeDemand(loaded) <= 4 * MB);
});

Load("planLoads() says a fault does not fit when one round of it would outlast the fault at the stated share", () => {
  // 40 MB/s, 20 for the faults: one 64 MB get needs 3.2 s, more than a 3 s fault; a 5 MB burst a worker fits.
  const loaded = planLoads(40 * MB, 0.5, 4, 3000);
  assert.equal([loaded.bigFits, loaded.hugeFits], [true, false]);
  assert.ok(planLoads(40 * MB, 0.5, 4, 3200).hugeFits);
  // 1 MB/s: even the smallest burst, 8 MB over four workers, needs 16 s.
  const starved = planLoads(1 * MB, 0.5, 4, 3000);
  assert.equal([starved.bigGets, starved.bigFits, starved.hugeFits], [1, false, false]);
});

Load("planLoads() keeps the 1 MB fault at most at its original size, whatever the drain", () => {
  assert.is(planLoads(10_000 * MB, 1, 4, 3000).bigGets, settings.bigBurst);
});

Load("planLoads() refuses a fraction outside (0, 1] and a drain that was not measured", () => {
  assert.throws(
    () => planLoads(100 * MB, 0, 4, 3000),
    (e: Error) => e instanceof RangeError && /'fraction'/.test(e.message),
  );
  assert.throws(() => planLoads(100 * MB, 1.5, 4, 3000), RangeError);
  assert.throws(() => planLoads(0, 0.5, 4, 3000), (e: Error) => e instanceof RangeError && /drain/.test(e.message));
});

Load("loadRun() sums the workers' answers and counts a missing answer as unsettled", () => {
  const answer = (bytes: number, settled: boolean, ms: number) => ({
    t: "load" as const,
    requests: 3,
    bytes,
    errors: settled ? 0 : 1,
    settled,
    ms,
  });
  const run = loadRun("1 MB", 3, [answer(2 * MB, true, 900), answer(MB, false, 1500)]);
  assert.equal(run, {
    name: "1 MB",
    requests: 6,
    bytes: 3 * MB,
    errors: 1,
    settledWorkers: 1,
    workers: 3,
    ms: 1500,
  });
});

Load.run();
