/**
 * Scenario 2: one hot key expiring under steady load. Without protection
 * every request that arrives while the first refresh is in flight calls the
 * origin too (rate x origin time per expiry); each layer should cut that.
 *
 * @module
 */
import { layerSettings } from "../rows/layers.ts";
import { type SteadyLoad, steadyScenario, ttlMarks } from "../load/steady_scenario.ts";

/** How many pools (app instances) share a row in the one-key stories. */
const POOLS = 4;

/**
 * One key, a 100 ms origin, expiring every `ttlMs` under `ratePerSec`; also
 * the recipes' hot key, and the base of the failing-origin and clock-skew stories.
 */
export function hotKeyLoad(ratePerSec: number, durationMs: number, ttlMs: number): Omit<SteadyLoad, "setup"> {
  return {
    pools: POOLS,
    ratePerSec,
    durationMs,
    ttlMs,
    keys: 1,
    origin: { baseMs: 100 },
    bucketMs: 100,
    timeoutMs: 1000,
    layers: layerSettings(ttlMs, { waitMs: 1000 }),
    marks: ttlMarks(ttlMs, durationMs),
  };
}

export const hotKey = steadyScenario("hot-key", "hot key expiring under steady load", ({ quick }) => {
  const ttlMs = quick ? 700 : 2000;
  const durationMs = quick ? 1600 : 10_000;
  // 1,000 per set: seven sets side by side are 7,000 gets/s in one process. At
  // 2,000 per set a busy machine starved the lab's own event loop (p99 delay
  // of seconds), and the lab would have measured itself instead of the cache.
  const ratePerSec = 1000;
  return {
    ...hotKeyLoad(ratePerSec, durationMs, ttlMs),
    setup: `${ratePerSec} requests/s for ${durationMs / 1000} s on 1 key, TTL ${ttlMs} ms, ${POOLS} pools per set`,
  };
});
