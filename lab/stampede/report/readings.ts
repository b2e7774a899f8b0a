/**
 * What each scenario's table shows: the column that improves as layers are
 * added, and why another may not (the many-keys full pipeline makes more
 * origin calls than no protection at all, because jitter only shortens TTLs;
 * what it improves is the peak). Printed under every table, quick or full,
 * with the run's own numbers for the first row (no protection) and the last
 * (the full pipeline).
 *
 * @module
 */
import type { RowResult } from "../types.ts";
import { count as n, ms } from "../../shared/format.ts";

type Reading = (none: RowResult, full: RowResult, rows: readonly RowResult[]) => string;

const row = (rows: readonly RowResult[], set: string) => rows.find((r) => r.set === set);

const READINGS: Record<string, Reading> = {
  "cold-burst": (none, full, rows) =>
    `What improves: origin calls (${n(none.originCalls)} with none, ${n(full.originCalls)} with the full pipeline). ` +
    `coalesce merges callers within one cache (${n(row(rows, "coalesce")?.originCalls ?? 0)}: one per cache), ` +
    "lease across processes (1). The later layers cannot help a key that was never stored.",
  "hot-key": (none, full) =>
    `What improves: origin calls per expiry (${n(none.originCalls)} with none, ${n(full.originCalls)} with the full ` +
    `pipeline) and peak in flight (${n(none.peakConcurrent)} to ${
      n(full.peakConcurrent)
    }). jitter changes nothing for ` +
    "one key; xfetch adds a few early refreshes so that no caller waits for the origin (p99 " +
    `${ms(none.latency.p99)} to ${ms(full.latency.p99)} ms).`,
  "many-keys": (none, full, rows) =>
    `What improves: peak in flight (${n(none.peakConcurrent)} with none, ${n(full.peakConcurrent)} with the full ` +
    `pipeline), not origin calls (${n(none.originCalls)} and ${n(full.originCalls)}). Every key is a different ` +
    "load, so coalesce and lease merge only the concurrent callers of one key; jitter spreads the expiries by " +
    "shortening TTLs, which costs extra refreshes " +
    `(${n(row(rows, "+ lease")?.originCalls ?? 0)} calls with + lease, ${n(row(rows, "+ jitter")?.originCalls ?? 0)} ` +
    "with + jitter), and xfetch adds early ones, so the full pipeline may call the origin as often as none, or more. " +
    `swr takes the refreshes off the callers' path (p99 ${ms(none.latency.p99)} to ${ms(full.latency.p99)} ms, ` +
    `${n(full.stale)} served stale).`,
  "slow-origin": (none, full) =>
    `What improves: timeouts (${n(none.timeouts)} with none, ${n(full.timeouts)} with the full pipeline). ` +
    `Unprotected, the herd (peak in flight ${n(none.peakConcurrent)}) slows the origin until no call finishes ` +
    `in time; one call per key (peak ${n(full.peakConcurrent)}) keeps it at its normal speed.`,
  "failing-origin": (none, full) =>
    `What improves: errors and timeouts (${n(none.errors + none.timeouts)} with none, ` +
    `${n(full.errors + full.timeouts)} with the full pipeline), traded for stale responses (${n(full.stale)}): ` +
    `swr's error window serves the last good value. lease cuts the failing origin calls (${n(none.originCalls)} to ` +
    `${n(full.originCalls)}), but without swr its waiters time out behind a failing owner.`,
  "flush": (none, full) =>
    `What improves: peak in flight (${n(none.peakConcurrent)} with none, ${n(full.peakConcurrent)} with the full ` +
    `pipeline) and with it the tail latency (p99 ${ms(none.latency.p99)} to ${ms(full.latency.p99)} ms): nothing ` +
    "stale survives a flush, lease makes it one load per key, and limit caps loads in flight, refusing the excess " +
    `fast with OverloadedError (the errors column: ${n(full.errors)}).`,
  "near-cache": (remote, near) => {
    const r = remote.coherence;
    const c = near.coherence;
    if (r === undefined || c === undefined) return "";
    const fine = (x: number) => (x < 1 ? x.toFixed(2) : ms(x));
    return `What improves: reads served from memory, without a round trip (near hits ${
      (c.nearHitRatio * 100).toFixed(1)
    }%, read p50 ${fine(remote.latency.p50)} to ${fine(near.latency.p50)} ms); origin calls stay ` +
      `${n(remote.originCalls)} and ${n(near.originCalls)}, since set() keeps every key stored. What it costs: ` +
      `stale reads (${n(r.staleReads)} remote, ${n(c.staleReads)} of ${n(near.requests)} through near()), ` +
      `starting ${fine(c.staleAfterAck.p50)} ms (p50), ${fine(c.staleAfterAck.p99)} ms (p99), at most ` +
      `${fine(c.staleAfterAck.max)} ms after the newer version's set() was acknowledged: the one hop an ` +
      "invalidation travels from Redis to a reader, longer while a reader waits for a CPU. " +
      `Coherence lag (acknowledged write to a reader's first read of it, re-read included) p50/p99: ` +
      `${fine(r.lag.p50)}/${fine(r.lag.p99)} ms remote, ${fine(c.lag.p50)}/${fine(c.lag.p99)} ms near.`;
  },
};

/** The sentence under a scenario's table, or undefined for a scenario without one. */
export function reading(id: string, rows: readonly RowResult[]): string | undefined {
  const first = rows[0];
  const last = rows[rows.length - 1];
  if (first === undefined || last === undefined || rows.length < 2) return undefined;
  return READINGS[id]?.(first, last, rows) || undefined;
}
