/**
 * The protocol between the Redis-down stories (scenarios/redis_down.ts) and
 * their app processes (outage_worker.ts): the command for one story and
 * the report that comes back per row. The parent and its workers talk
 * through the lab's own server; the caches use the story's server, the one
 * that is killed or made to refuse writes.
 *
 * @module
 */
import type { CacheStats } from "../../../mod.ts";
import type { LoadResult } from "../load/open_loop.ts";
import type { LayerSettings } from "../rows/layers.ts";
import type { RecipeId } from "../rows/sets.ts";

/** One row: herdless' full pipeline in one `onRedisDown` mode, or an article's recipe. */
export type OutageRow =
  | { readonly label: string; readonly mode: "error" | "local" }
  | { readonly label: string; readonly recipe: RecipeId };

/** What the parent asks every app process for one story. */
export interface OutageCommand {
  /** The keys' prefix; each row adds its own. */
  namespace: string;
  /** The story's server: the caches' Redis. */
  url: string;
  rows: OutageRow[];
  layers: LayerSettings;
  ttlMs: number;
  keys: number;
  /** Zipf exponent of key popularity. */
  zipf: number;
  /** Requests per second per row, in this process. */
  ratePerSec: number;
  durationMs: number;
  /** Each herdless get's timeoutMs. */
  timeoutMs: number;
  originMs: number;
  bucketMs: number;
  /** When the fault starts and ends, ms after the release (origin calls between them are counted apart). */
  fault: { fromMs: number; toMs: number };
}

/** What one app process reports for one row: its load's outcome, then what the fault did. */
export interface OutageRowReport extends Omit<LoadResult, "latencies"> {
  label: string;
  /** Every settled request's latency, ms. */
  latencies: number[];
  /** The cache's counters over the run (warm-up excluded). */
  stats: CacheStats;
  /** Origin calls started during the run, and those started while the fault lasted. */
  originCalls: number;
  originCallsInFault: number;
  originErrors: number;
  /** Most origin calls at once in this process, of any keys and of one key. */
  peak: number;
  peakPerKey: number;
  /** Origin calls started per bucket. */
  series: number[];
  /** ms after the release when this row's client first failed (lost its connection, or a command failed); -1: never. */
  firstFailureMs: number;
  /** The longest request that began after that failure, ms (0: none began). */
  waitedAfterFailure: number;
  /** Redis commands the row's client sent during the run. */
  commands: number;
}

/** What one app process reports for one story. */
export interface OutageReport {
  id: string;
  rows: OutageRowReport[];
  /** This process's event-loop delay during the run, ms. */
  loopDelay: { p99: number; max: number };
}
