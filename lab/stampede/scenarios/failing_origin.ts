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
import { type SteadyLoad, steadyScenario } from "../load/steady_scenario.ts";
import { hotKeyLoad } from "./hot_key.ts";

/** swr's error window: longer than any outage here, so the last good value can always be served. */
const IF_ERROR_MS = 10_000;

/** When the origin is down, ms after the clock starts. */
export function outageOf(quick: boolean): { from: number; to: number } {
  return quick ? { from: 500, to: 1300 } : { from: 700, to: 4000 };
}

/** The hot key's load with the origin down from `down.from` to `down.to`; also the recipes' story. */
export function failingOriginLoad(
  ratePerSec: number,
  durationMs: number,
  ttlMs: number,
  down: { from: number; to: number },
): Omit<SteadyLoad, "setup"> {
  return {
    ...hotKeyLoad(ratePerSec, durationMs, ttlMs),
    origin: { baseMs: 100, failing: (at) => at >= down.from && at < down.to },
    // waitMs below the caller's timeout: a waiter whose wait runs out can still be
    // served the error-window value; a caller whose own timeout fires first cannot.
    layers: layerSettings(ttlMs, { waitMs: 500, ifErrorMs: IF_ERROR_MS }),
    marks: [{ atMs: down.from, toMs: down.to, label: "origin down" }, { atMs: ttlMs, label: "TTL" }],
  };
}

export const failingOrigin = steadyScenario("failing-origin", "origin failing during refresh", ({ quick }) => {
  const ttlMs = quick ? 700 : 1000;
  const durationMs = quick ? 1600 : 5000;
  const down = outageOf(quick);
  const ratePerSec = 1000;
  const load = failingOriginLoad(ratePerSec, durationMs, ttlMs, down);
  return {
    ...load,
    setup: `${ratePerSec} requests/s for ${
      durationMs / 1000
    } s on 1 key, TTL ${ttlMs} ms, origin down from ${down.from} to ${down.to} ms, swr error window ${IF_ERROR_MS} ms, lease waitMs 500, caller timeout 1000 ms, ${load.pools} pools per set`,
  };
});
