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
import { runSteady } from "../load/steady.ts";
import type { Scenario } from "../types.ts";

export const slowOrigin: Scenario = {
  id: "slow-origin",
  title: "origin slowing with its concurrency",
  run(ctx) {
    const quick = ctx.quick;
    const ttlMs = quick ? 700 : 1000;
    const durationMs = quick ? 1600 : 5000;
    const ratePerSec = 1000;
    const pools = 4;
    const maxMs = quick ? 1000 : 3000;
    return runSteady(ctx, {
      id: this.id,
      title: this.title,
      setup: `${ratePerSec} requests/s for ${
        durationMs / 1000
      } s on 1 key, TTL ${ttlMs} ms, caller timeout 1000 ms, statement timeout ${maxMs} ms, ${pools} pools per set`,
      pools,
      ratePerSec,
      durationMs,
      ttlMs,
      keys: 1,
      origin: { baseMs: 50, slowdown: 0.1, maxMs },
      bucketMs: 100,
      timeoutMs: 1000,
      layers: layerSettings(ttlMs, { waitMs: 1000, leaseMs: 3000 }),
      marks: Array.from(
        { length: Math.floor((durationMs - 1) / ttlMs) },
        (_, i) => ({ atMs: (i + 1) * ttlMs, label: "TTL" }),
      ),
    });
  },
};
