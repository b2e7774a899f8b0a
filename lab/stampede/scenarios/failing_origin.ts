/**
 * Scenario 5: the origin fails while the hot key needs a refresh (an
 * outage that starts before an expiry and outlasts it). Without stale-if-
 * error every caller after the expiry gets an error or a timeout; with
 * swr's error window the last good value is served (stale) instead, and
 * nobody sees the outage. The outage span is shaded on the chart.
 *
 * @module
 */
import { layerSettings } from "../rows/layers.ts";
import { runSteady } from "../load/steady.ts";
import type { Scenario } from "../types.ts";

export const failingOrigin: Scenario = {
  id: "failing-origin",
  title: "origin failing during refresh",
  run(ctx) {
    const quick = ctx.quick;
    const ttlMs = quick ? 700 : 1000;
    const durationMs = quick ? 1600 : 5000;
    const down = quick ? { from: 500, to: 1300 } : { from: 700, to: 4000 };
    const ratePerSec = 1000;
    const pools = 4;
    const ifErrorMs = 10_000;
    return runSteady(ctx, {
      id: this.id,
      title: this.title,
      setup: `${ratePerSec} requests/s for ${
        durationMs / 1000
      } s on 1 key, TTL ${ttlMs} ms, origin down from ${down.from} to ${down.to} ms, swr error window ${ifErrorMs} ms, lease waitMs 500, caller timeout 1000 ms, ${pools} pools per set`,
      pools,
      ratePerSec,
      durationMs,
      ttlMs,
      keys: 1,
      origin: { baseMs: 100, failing: (at) => at >= down.from && at < down.to },
      bucketMs: 100,
      timeoutMs: 1000,
      // waitMs below the caller's timeout: a waiter whose wait runs out can still be
      // served the error-window value; a caller whose own timeout fires first cannot.
      layers: layerSettings(ttlMs, { waitMs: 500, ifErrorMs }),
      marks: [{ atMs: down.from, toMs: down.to, label: "origin down" }, { atMs: ttlMs, label: "TTL" }],
    });
  },
};
