/**
 * Scenario 4: an origin that slows down as its concurrency grows (a
 * database sharing its CPU and locks among queries). One hot key expires
 * under load; without protection the herd slows the very call that would
 * end the miss, so the miss window grows, admitting more of the herd: the
 * feedback loop that turns one expiry into an outage. Abandoned calls keep
 * running (the database does not know the caller left) until the
 * statement timeout.
 *
 * @module
 */
import { layerSettings } from "../rows/layers.ts";
import { steadyScenario } from "../load/steady_scenario.ts";
import { hotKeyLoad } from "./hot_key.ts";

export const slowOrigin = steadyScenario("slow-origin", "origin slowing with its concurrency", ({ quick }) => {
  const ttlMs = quick ? 700 : 1000;
  const durationMs = quick ? 1600 : 5000;
  const ratePerSec = 1000;
  const maxMs = quick ? 1000 : 3000;
  const load = hotKeyLoad(ratePerSec, durationMs, ttlMs);
  return {
    ...load,
    setup: `${ratePerSec} requests/s for ${
      durationMs / 1000
    } s on 1 key, TTL ${ttlMs} ms, caller timeout 1000 ms, statement timeout ${maxMs} ms, ${load.pools} pools per set`,
    origin: { baseMs: 50, slowdown: 0.1, maxMs },
    layers: layerSettings(ttlMs, { waitMs: 1000, leaseMs: 3000 }),
  };
});
