/**
 * Scenario 3: many keys written together and expiring together (a deploy
 * warmed them, a batch job wrote them). With one TTL they all expire in the
 * same instant and every one of them needs the origin at once: the peak
 * concurrency column is the number to watch. Jitter draws each TTL from
 * [ttl - spread, ttl] so the same refreshes spread over the spread window;
 * coalesce and lease cannot help here, since each key is a different call.
 *
 * @module
 */
import { layerSettings } from "../rows/layers.ts";
import { type SteadyLoad, steadyScenario } from "../load/steady_scenario.ts";

const KEYS = 100;

/** 100 keys written together, TTL `ttlMs`, jitter spread half of it; also the recipes' story. */
export function manyKeysLoad(ratePerSec: number, durationMs: number, ttlMs: number): Omit<SteadyLoad, "setup"> {
  return {
    pools: 4,
    ratePerSec,
    durationMs,
    ttlMs,
    keys: KEYS,
    origin: { baseMs: 100 },
    bucketMs: 50,
    timeoutMs: 1000,
    layers: layerSettings(ttlMs, { jitterSpreadMs: Math.floor(ttlMs / 2), waitMs: 1000 }),
    marks: [{ atMs: ttlMs, label: "TTL" }],
  };
}

export const manyKeys = steadyScenario("many-keys", "many keys expiring together", ({ quick }) => {
  const ttlMs = quick ? 700 : 2000;
  const durationMs = quick ? 1600 : 5000;
  const ratePerSec = 1000;
  const load = manyKeysLoad(ratePerSec, durationMs, ttlMs);
  return {
    ...load,
    setup:
      `${KEYS} keys written together, TTL ${ttlMs} ms (jitter spread ${load.layers.jitterSpreadMs} ms), ${ratePerSec} requests/s spread over them for ${
        durationMs / 1000
      } s, ${load.pools} pools per set`,
  };
});
