/**
 * Scenario 2: one hot key expiring under steady load. Without protection
 * every request that arrives while the first refresh is in flight calls the
 * origin too (rate x origin time per expiry); each layer should cut that.
 *
 * @module
 */
import { layerSettings } from "../rows/layers.ts";
import { runSteady } from "../load/steady.ts";
import type { Mark, Scenario } from "../types.ts";

export const hotKey: Scenario = {
  id: "hot-key",
  title: "hot key expiring under steady load",
  run(ctx) {
    const quick = ctx.quick;
    const ttlMs = quick ? 700 : 2000;
    const durationMs = quick ? 1600 : 10_000;
    // 1,000 per set: seven sets side by side are 7,000 gets/s in one process. At
    // 2,000 per set a busy machine starved the lab's own event loop (p99 delay
    // of seconds), and the lab would have measured itself instead of the cache.
    const ratePerSec = 1000;
    const pools = 4;
    const marks: Mark[] = [];
    for (let t = ttlMs; t < durationMs; t += ttlMs) marks.push({ atMs: t, label: "TTL" });
    return runSteady(ctx, {
      id: this.id,
      title: this.title,
      setup: `${ratePerSec} requests/s for ${durationMs / 1000} s on 1 key, TTL ${ttlMs} ms, ${pools} pools per set`,
      pools,
      ratePerSec,
      durationMs,
      ttlMs,
      keys: 1,
      origin: { baseMs: 100 },
      bucketMs: 100,
      timeoutMs: 1000,
      layers: layerSettings(ttlMs, { waitMs: 1000 }),
      marks,
    });
  },
};
