/**
 * A row of a multi-process scenario from its processes' reports: what the
 * callers saw (latency, errors, timeouts, the caches' counters, the kinds
 * of errors), summed or pooled over every process that ran the row.
 *
 * @module
 */
import type { CacheStats } from "../../../mod.ts";
import { percentiles } from "../load/open_loop.ts";
import { addStats } from "../rows/checks.ts";
import type { RowResult } from "../types.ts";

/** What each process reports of one row. */
export interface ProcessRow {
  /** Every settled request's latency, ms. */
  latencies: readonly number[];
  errors: number;
  timeouts: number;
  errorSamples: readonly string[];
  stats: CacheStats;
}

/** The caller's side of a row over `reports` (at least one). */
export function combine(
  reports: readonly ProcessRow[],
): Pick<RowResult, "latency" | "stale" | "errors" | "timeouts" | "dropped" | "stats" | "errorSamples"> {
  const stats = reports.map((r) => r.stats).reduce(addStats);
  return {
    latency: percentiles(Float64Array.from(reports.flatMap((r) => r.latencies))),
    stale: stats.stale,
    errors: reports.reduce((n, r) => n + r.errors, 0),
    timeouts: reports.reduce((n, r) => n + r.timeouts, 0),
    dropped: 0,
    stats,
    errorSamples: [...new Set(reports.flatMap((r) => r.errorSamples))],
  };
}
