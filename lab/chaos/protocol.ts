/**
 * What a worker tells the parent, one JSON object a stdout line, and how an
 * error is named in the table.
 *
 * @module
 */

/** One measurement window of one worker: gets that settled in it, by outcome. */
export interface Window {
  t: "win";
  /** Window number: `floor((Date.now() - t0) / windowMs)` when the gets settled. */
  i: number;
  /** Gets settled (resolved or rejected). */
  gets: number;
  /** Rejections by {@linkcode errorClass}. */
  errors: Record<string, number>;
  /** Rejections by class and message, variable parts masked ({@linkcode errorMessage}). */
  messages: Record<string, number>;
  /** Latency of each settled get, in ms. */
  latencies: number[];
  /** Gets served a lower version than a get of the same key that settled before they started. */
  backwards: number;
  /**
   * Of those, gets whose newer version had been served by another master
   * (the sentinel worker, across a failover): a write the old master took
   * that never reached the new one, async replication's documented loss,
   * counted apart and not in `backwards`.
   */
  lost?: number;
  /** Gets served another key's value. */
  wrong: number;
  /** Process RSS in bytes, and the caches' `lateRejected` and `shed` counters, when the window was sent. */
  rss?: number;
  late?: number;
  shed?: number;
}

/** A worker's report line. */
export type Report =
  | { t: "ready"; id: number }
  | Window
  /** A get (or, with `what`, a close) still unsettled after the hang bound; `i` is the window it started in. */
  | { t: "hang"; i: number; what?: string }
  /** A remark for the legend of the phase it arrives in. */
  | { t: "note"; text: string }
  | { t: "done"; unsettled: number }
  /** Answer to `drain <ms>`: bytes of raw 1 MB GETs that arrived over `ms`. */
  | { t: "drain"; bytes: number; ms: number }
  /** Answer to `settle`: the load faults' requests since the last `settle`, once they settled (or the hang bound passed). */
  | LoadReport;

/** What one worker sent and received for a load fault. */
export interface LoadReport {
  t: "load";
  /** Raw GETs and cached gets of the big values it was asked for. */
  requests: number;
  /** Bytes of their replies that arrived. */
  bytes: number;
  /** Requests that failed. */
  errors: number;
  /** False if some were still pending after the hang bound. */
  settled: boolean;
  /** From the first request to the last reply, in ms. */
  ms: number;
}

/** The class of an error as the table shows it: its name, with the Redis error code or errno when it has one. */
export function errorClass(error: unknown): string {
  const e = error as { name?: unknown; code?: unknown } | null;
  const name = typeof e?.name === "string" ? e.name : typeof error;
  return typeof e?.code === "string" ? `${name} ${e.code}` : name;
}

/** `<class>: <message>` with what varies between occurrences (addresses, key hashes, numbers) masked, to count by kind. */
export function errorMessage(error: unknown): string {
  const message = String((error as Error | null)?.message ?? error)
    .replace(/\{[^}]*\}/g, "{…}")
    .replace(/redis:\/\/\S+/g, "redis://…")
    .replace(/\d+/g, "N")
    .slice(0, 160);
  return `${errorClass(error)}: ${message}`;
}
