/**
 * Scenario 6: FLUSHALL in the middle of a run (a failover to an empty
 * replica, a cache node replaced): every key misses at once and nothing
 * stale is left to serve. coalesce and lease cut it to one call per key,
 * but that is still every key at once against an origin that slows with
 * concurrency; limit() caps the calls in flight per cache and sheds what
 * cannot start within its queue time (counted as errors: OverloadedError).
 *
 * @module
 */
import { layerSettings } from "../rows/layers.ts";
import { type SteadyLoad, steadyScenario } from "../load/steady_scenario.ts";
import type { LabContext } from "../types.ts";

/** Warm keys read Zipf 1 by `ratePerSec`, flushed a moment in; also the recipes' story. */
export function flushLoad(ctx: LabContext, ratePerSec: number): SteadyLoad {
  const quick = ctx.quick;
  const ttlMs = 60_000;
  const durationMs = quick ? 1400 : 4000;
  const flushAt = quick ? 400 : 1000;
  const keys = quick ? 500 : 2000;
  const maxMs = quick ? 1000 : 3000;
  const pools = 4;
  const layers = layerSettings(ttlMs, { waitMs: 1000, concurrency: 8, queueMs: 100 });
  return {
    setup: `${keys} keys warm, ${ratePerSec} requests/s over them (Zipf 1: a few keys take most reads) for ${
      durationMs / 1000
    } s, FLUSHALL at ${flushAt} ms, limit ${layers.concurrency} loads per cache x ${pools} pools, queue ${layers.queueMs} ms, statement timeout ${maxMs} ms`,
    pools,
    ratePerSec,
    durationMs,
    ttlMs,
    keys,
    zipf: 1,
    origin: { baseMs: 50, slowdown: 0.05, maxMs },
    bucketMs: 50,
    timeoutMs: 1000,
    layers,
    marks: [{ atMs: flushAt, label: "FLUSHALL" }],
    events: [{ atMs: flushAt, run: () => ctx.flush() }],
  };
}

export const flush = steadyScenario("flush", "FLUSHALL mid-run (cold start)", (ctx) => flushLoad(ctx, 1000));
