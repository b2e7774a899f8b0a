/**
 * The protocol between the near-cache scenario and its worker processes
 * (one writer, several readers): the command for one row, the reports that
 * come back, the Redis keys of the barrier, and the values written.
 *
 * @module
 */
import type { CacheStats } from "../../../mod.ts";
import { barrierKeys } from "./children.ts";

/** What the parent asks every worker for one row. */
export interface NearCommand {
  row: number;
  /** Readers put `near()` in front of `coalesce(), lease()`. */
  withNear: boolean;
  namespace: string;
  /** Hot keys, read round-robin and rewritten round-robin. */
  keys: number;
  /** How long readers read after the release, ms. */
  durationMs: number;
  /** The writer stops this long before the readers, so its last writes are read too, ms. */
  tailMs: number;
  /** The writer's pause between two writes, ms. */
  writeEveryMs: number;
  /** Read loops per reader process (each awaits its read, then pauses `pauseMs`). */
  loops: number;
  /** A read loop's pause between two reads, ms (a timer: at least one event-loop turn). */
  pauseMs: number;
  /** `process.hrtime.bigint()` of the parent when the row began: every stamp is ns since it. */
  base: string;
  /** Where readers write their read logs (binary). */
  dir: string;
}

/** What the writer reports: its writes as [key, version, sentNs, ackNs] tuples. */
export interface WriterReport {
  writes: [number, number, number, number][];
  errors: string[];
}

/** What a reader reports; its reads are in `<dir>/reader-<id>.bin`, 4 float64 per read. */
export interface ReaderReport {
  id: string;
  reads: number;
  errors: number;
  timeouts: number;
  errorSamples: string[];
  /** Origin calls this process made (misses; expected 0 after the warm-up). */
  loads: number;
  /** Most origin calls in flight at once in this process. */
  peak: number;
  /** This process's event-loop delay during the run, ms: how long a push could wait to be read. */
  loopDelay: { p99: number; max: number };
  stats: CacheStats;
}

/** The Redis keys of one row. */
export function nearKeys(namespace: string) {
  return {
    ...barrierKeys(namespace),
    /** The origin's record of key k (the "database" the writer updates before each set()). */
    db: (k: number) => `${namespace}:db:${k}`,
  };
}

/** The cached value: its version and padding to about 120 bytes of JSON, like the bench's. */
export interface NearValue {
  v: number;
  body: string;
}

/** The value of version `v`. */
export function nearValue(v: number): NearValue {
  return { v, body: "x".repeat(100) };
}
