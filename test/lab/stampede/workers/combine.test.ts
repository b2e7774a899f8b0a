/**
 * A multi-process row from its processes' reports (lab/stampede/workers/
 * combine.ts): latencies pooled before the percentiles, counts and counters
 * summed, error kinds once each.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { CacheStats } from "../../../../mod.ts";
import { counters } from "../../../../lab/stampede/recipes/types.ts";
import { combine } from "../../../../lab/stampede/workers/combine.ts";

const Combine = suite("combine()");

const stats = (over: Partial<CacheStats>): CacheStats => ({ ...counters(), ...over });

Combine("pools the latencies of every process, sums errors, timeouts and counters, keeps each error once", () => {
  const row = combine([
    { latencies: [1, 2, 3], errors: 1, timeouts: 0, errorSamples: ["A: x"], stats: stats({ hits: 3, stale: 1 }) },
    { latencies: [100], errors: 0, timeouts: 2, errorSamples: ["A: x", "B: y"], stats: stats({ hits: 1, stale: 2 }) },
  ]);
  // The pooled p99 of [1, 2, 3, 100] is 100: a per-process p99 averaged would hide the slow process.
  assert.equal(row.latency, { p50: 2, p99: 100, max: 100 });
  assert.equal([row.errors, row.timeouts, row.stale, row.stats.hits], [1, 2, 3, 4]);
  assert.equal(row.errorSamples, ["A: x", "B: y"]);
});

Combine.run();
