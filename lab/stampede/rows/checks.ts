/**
 * Counter arithmetic and the invariants a row must keep. Timing is never
 * asserted (the machine may be busy); only counts that no timing can
 * explain make the lab fail: a request that never settled, an origin call
 * no cache started, a load without a miss or refresh behind it.
 *
 * @module
 */
import type { CacheStats } from "../../../mod.ts";
import type { RowResult } from "../types.ts";

/** `a + b`, counter by counter. */
export function addStats(a: CacheStats, b: CacheStats): CacheStats {
  const out = { ...a };
  for (const k of Object.keys(out) as (keyof CacheStats)[]) out[k] = a[k] + b[k];
  return out;
}

/** `a - b`, counter by counter (counters since a snapshot). */
export function subStats(a: CacheStats, b: CacheStats): CacheStats {
  const out = { ...a };
  for (const k of Object.keys(out) as (keyof CacheStats)[]) out[k] = a[k] - b[k];
  return out;
}

/** What a row must satisfy whatever the timing; returns one message per violation. */
export function checkRow(scenario: string, row: RowResult, hung: number, settled: number): string[] {
  const at = `${scenario} / ${row.set}`;
  const p: string[] = [];
  const s = row.stats;
  if (hung > 0) p.push(`${at}: ${hung} requests never settled (every get has a timeout)`);
  if (settled !== row.requests) {
    p.push(`${at}: ${row.requests} requests issued but ${settled} settled`);
  }
  // The origin counts its own calls; the caches count the loads they start. They must agree exactly.
  if (row.originCalls !== s.loads) {
    p.push(`${at}: the origin counted ${row.originCalls} calls but the caches started ${s.loads} loads`);
  }
  // Every load is started by a miss or by a background refresh (early or stale), never out of nowhere.
  if (s.loads > s.misses + s.earlyRefreshes + s.stale) {
    p.push(
      `${at}: ${s.loads} loads but only ${s.misses} misses + ${s.earlyRefreshes} early refreshes + ${s.stale} stale reads`,
    );
  }
  if (row.peakConcurrent > row.originCalls) {
    p.push(`${at}: peak concurrency ${row.peakConcurrent} above ${row.originCalls} calls`);
  }
  if (row.originErrors > row.originCalls) {
    p.push(`${at}: ${row.originErrors} origin errors out of ${row.originCalls} calls`);
  }
  if (row.stale > row.requests) p.push(`${at}: ${row.stale} stale responses for ${row.requests} requests`);
  for (const [k, v] of Object.entries(s)) if (v < 0) p.push(`${at}: counter ${k} went backwards (${v})`);
  return p;
}
