/**
 * The shapes the scenarios produce and the table, chart and JSON consume.
 *
 * @module
 */
import type { CacheStats } from "../../mod.ts";

/** One strategy set's run of one scenario: one row of its table, one panel of its chart. */
export interface RowResult {
  /** The strategy set, e.g. `+ lease`. */
  set: string;
  /** The strategies in pipeline order, e.g. `coalesce, lease`. */
  strategies: string;
  /** Requests issued (warm-up excluded). */
  requests: number;
  /** Origin calls started (warm-up excluded; background refreshes included). */
  originCalls: number;
  /** Origin calls that failed (outage or statement timeout). */
  originErrors: number;
  /** Most origin calls in flight at once. */
  peakConcurrent: number;
  /** Caller latency over every settled request, success or failure, ms. */
  latency: { p50: number; p99: number; max: number };
  /** Responses served stale (swr's stale window or stale-if-error). */
  stale: number;
  /** Requests that failed with anything but a timeout (origin error, OverloadedError...). */
  errors: number;
  /** Requests that failed with TimeoutError. */
  timeouts: number;
  /** Requests the generator dropped because too many were outstanding. */
  dropped: number;
  /** Origin calls started per bucket. */
  series: number[];
  /** The caches' counters, summed over pools (and processes). */
  stats: CacheStats;
  /** One message per kind of error callers saw. */
  errorSamples: string[];
  /** Redis commands the row's clients sent during the run (warm-up excluded). */
  commands?: number;
  /** Responses whose value had been loaded more than the TTL before the request started (true clock; steady scenarios). */
  pastTtl?: number;
  /** Each successful origin call's start and end, ms since the clock started (steady scenarios). */
  loads?: [number, number][];
  /** Responses with a value older than one this row had already answered another request with (for that key) before they started. */
  older?: number;
  /** The near-cache scenario's readings (absent elsewhere); `series` then counts stale reads. */
  coherence?: CoherenceReadings;
  /** The Redis-down stories' readings (absent elsewhere). */
  outage?: OutageReadings;
}

/** What the Redis-down stories measure per row, beyond the common columns. */
export interface OutageReadings {
  /** Origin calls started while the fault lasted. */
  callsInFault: number;
  /** Most origin calls of one key at once in one process. */
  peakPerKey: number;
  /** The longest request begun after its process' client first failed, ms. */
  waitedAfterFailure: number;
  /** The earliest first failure among the processes, ms after the release (-1: none failed). */
  firstFailureMs: number;
}

/** What the near-cache scenario measures per row, beyond the common columns. */
export interface CoherenceReadings {
  /** Acknowledged `set()`s by the writer. */
  writes: number;
  /** Reads that returned a version older than one acknowledged before they started (exact). */
  staleReads: number;
  /** How long after the newer version's acknowledgement each stale read started, ms (zeros: none). */
  staleAfterAck: { p50: number; p99: number; max: number };
  /** Event-loop delay of the reader processes during the run, ms (the worst p99 and max among them). */
  readerLoopDelay: { p99: number; max: number };
  /** Reads served by the near tier (stats().nearHits), and their share of all reads. */
  nearHits: number;
  nearHitRatio: number;
  /** From a write's acknowledgement to a reader process's first read of it (or newer), ms, per write and process. */
  lag: { p50: number; p99: number; max: number };
  /** (write, process) pairs whose version the process never read (it was rewritten first, or the run ended). */
  unseen: number;
}

/** A vertical mark or a shaded span on the chart (an expiry, a FLUSHALL, an outage). */
export interface Mark {
  atMs: number;
  /** When set, the mark is a span up to here. */
  toMs?: number;
  label: string;
}

/** One scenario's results. */
export interface ScenarioResult {
  id: string;
  title: string;
  /** The load and settings in one line. */
  setup: string;
  /** The origin's label, e.g. `simulated origin: 100 ms, in-process`. */
  origin: string;
  bucketMs: number;
  durationMs: number;
  marks: Mark[];
  rows: RowResult[];
  /** Event-loop delay of the lab process during the run, ms (absent when the work ran elsewhere). */
  loopDelay?: { p99: number; max: number };
  /** Invariant violations: impossible counts that make the lab exit non-zero. */
  problems: string[];
  /** Columns and cells of its own, instead of the common table. */
  table?: { columns: string[]; cells: string[][] };
  /** The text under the table, when the scenario writes its own. */
  reading?: string;
  /** Sub-scenarios, each with its own table and chart (the recipes' comparison). */
  parts?: ScenarioResult[];
  /** What the chart's bars count per bucket. @default {"origin calls"} */
  seriesLabel?: string;
}

/** What a scenario is given by the runner. */
export interface LabContext {
  url: string;
  quick: boolean;
  /**
   * Leave out what the scenario's {@linkcode Scenario.quickLeavesOut} names:
   * true in the quick lab, unless `--only` named the scenario (then it runs
   * whole, at the quick lab's lengths).
   */
  cut: boolean;
  /** FLUSHALL on the lab's own server; on a REDIS_URL server, only the lab's keys are deleted. */
  flush(): Promise<void>;
  /** Show a progress line (on a terminal only). */
  progress(text: string): void;
}

/** A scenario: an id for `--only`, a title, and the run. */
export interface Scenario {
  id: string;
  title: string;
  /** Left out of the quick lab (the default) unless `--only` names it. @default {false} */
  fullOnly?: boolean;
  /** What the scenario itself leaves out of the quick lab, said at the end of a quick run. */
  quickLeavesOut?: string;
  run(ctx: LabContext): Promise<ScenarioResult>;
}
