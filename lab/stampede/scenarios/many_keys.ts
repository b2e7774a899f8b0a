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
import { runSteady } from "../load/steady.ts";
import type { Scenario } from "../types.ts";

export const manyKeys: Scenario = {
  id: "many-keys",
  title: "many keys expiring together",
  run(ctx) {
    const quick = ctx.quick;
    const ttlMs = quick ? 700 : 2000;
    const durationMs = quick ? 1600 : 5000;
    const keys = 100;
    const ratePerSec = 1000;
    const pools = 4;
    const spread = Math.floor(ttlMs / 2);
    return runSteady(ctx, {
      id: this.id,
      title: this.title,
      setup:
        `${keys} keys written together, TTL ${ttlMs} ms (jitter spread ${spread} ms), ${ratePerSec} requests/s spread over them for ${
          durationMs / 1000
        } s, ${pools} pools per set`,
      pools,
      ratePerSec,
      durationMs,
      ttlMs,
      keys,
      origin: { baseMs: 100 },
      bucketMs: 50,
      timeoutMs: 1000,
      layers: layerSettings(ttlMs, { jitterSpreadMs: spread, waitMs: 1000 }),
      marks: [{ atMs: ttlMs, label: "TTL" }],
    });
  },
};
