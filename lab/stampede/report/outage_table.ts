/**
 * The Redis-down stories' table and the sentence under it: per row, failed
 * requests, origin calls (all, while the fault lasted, the most of one key
 * at once in one process, the most at once in one process), p99, stale and
 * degraded responses, and the longest wait of a request begun after its
 * process' first failure; then the bound the origin calls are held to.
 *
 * @module
 */
import type { RowResult, ScenarioResult } from "../types.ts";
import { count as n, ms } from "../../shared/format.ts";

/** What the sentence needs besides the rows. */
export interface OutageShape {
  keys: number;
  processes: number;
  ttlMs: number;
  /** How long the fault lasted, ms. */
  faultMs: number;
  /** The worst event-loop delay p99 among the app processes, ms. */
  loopDelayP99: number;
}

const failed = (r: RowResult) => r.errors + r.timeouts;
const share = (r: RowResult) => (r.requests === 0 ? "0" : ((100 * failed(r)) / r.requests).toFixed(1));

/** The table's columns and cells, and the reading under it. */
export function outageTable(rows: readonly RowResult[], s: OutageShape): Pick<ScenarioResult, "table" | "reading"> {
  const cells = rows.map((r) => {
    const o = r.outage!;
    return [
      r.set,
      n(r.requests),
      `${n(failed(r))} (${share(r)}%)`,
      n(r.originCalls),
      n(o.callsInFault),
      n(o.peakPerKey),
      n(r.peakConcurrent),
      ms(r.latency.p99),
      n(r.stats.stale),
      n(r.stats.degraded),
      o.firstFailureMs < 0 ? "no failure" : ms(o.waitedAfterFailure),
    ];
  });
  // One load per key per process per fresh window, over the fault.
  const about = Math.round((s.keys * s.processes * s.faultMs) / s.ttlMs);
  const local = rows.find((r) => r.set.includes('"local"'));
  const error = rows.find((r) => r.set.includes('"error"'));
  const herdless = [error, local].flatMap((r) =>
    r === undefined ? [] : [
      `${r.set}: ${n(failed(r))} failed, ${n(r.outage!.callsInFault)} origin calls while the fault lasted, ` +
      `a request begun after the first failure waited at most ${ms(r.outage!.waitedAfterFailure)} ms`,
    ]
  );
  return {
    table: {
      columns: [
        "row",
        "requests",
        "failed",
        "origin calls",
        "during the fault",
        "most at once, one key, one process",
        "most at once, one process",
        "p99 ms",
        "stale",
        "degraded",
        "longest wait after the first failure, ms",
      ],
      cells,
    },
    reading: `${herdless.join("; ")}. One load per key per process per fresh window is about ${s.keys} keys ` +
      `x ${s.processes} processes x ${ms(s.faultMs)} ms / ${s.ttlMs} ms = ${n(about)} origin calls during the fault ` +
      `(jitter shortens windows; a key not read in a window costs nothing). Failed counts errors and timeouts; degraded counts herdless' gets served without ` +
      `Redis storing the value (stats().degraded); the last column is per process, from its client's first sign ` +
      `of the fault (the connection lost, or a command failed). Event-loop delay of the app processes: p99 up to ` +
      `${ms(s.loopDelayP99)} ms (latency below that is the machine).`,
  };
}
