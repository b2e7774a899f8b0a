/**
 * Sizing the faults whose demand is bandwidth: the 1 MB value read in bursts
 * and the 64 MB value. Asked at a fixed size, they measure the machine (a
 * loaded machine drains less than they ask, and the backlog, not the code,
 * decides the verdict). Sized to a stated fraction of the drain measured at
 * the start of the run, they ask what this machine can carry, on an idle and
 * a loaded machine alike.
 *
 * @module
 */
import { settings } from "./config.ts";
import type { LoadReport } from "./protocol.ts";

/** The two load faults as they will run. */
export interface LoadPlan {
  /** Measured drain, all workers' connections through the proxy together, bytes per second. */
  drainBytesPerSec: number;
  /** Share of the drain the faults may ask. */
  fraction: number;
  /** Raw GETs of the 1 MB value each worker sends at once (after one cached get of it), every `bigEveryMs`. */
  bigGets: number;
  bigEveryMs: number;
  /** How often worker 0 gets the 64 MB value. */
  hugeEveryMs: number;
  /** False when one round of the fault (a burst; one 64 MB get) could not arrive within the fault at this share. */
  bigFits: boolean;
  hugeFits: boolean;
}

/**
 * Size the load faults to `fraction` of the measured drain: each worker's
 * burst is one cached get of the 1 MB value and at most `settings.bigBurst`
 * raw GETs of it (the fault at its original size), at least one, once a
 * second or less often; the 64 MB value keeps its size (it is what makes
 * its write outlast its lease) and is asked once a second or less often.
 * A fault one round of which would not arrive within `faultMs` at that
 * share does not fit this machine: the run skips it and says so.
 */
export function planLoads(drainBytesPerSec: number, fraction: number, workers: number, faultMs: number): LoadPlan {
  if (!(fraction > 0 && fraction <= 1)) {
    throw new RangeError(`Cannot size the chaos load: 'fraction' must be in (0, 1], got ${fraction}`);
  }
  if (!(drainBytesPerSec > 0)) {
    throw new RangeError(`Cannot size the chaos load: the drain must be positive, got ${drainBytesPerSec} B/s`);
  }
  const budget = drainBytesPerSec * fraction;
  const perWorker = budget / workers;
  const bigGets = Math.max(1, Math.min(settings.bigBurst, Math.floor(perWorker / settings.bigBytes) - 1));
  const burstBytes = workers * (bigGets + 1) * settings.bigBytes;
  const bigMs = Math.ceil((burstBytes / budget) * 1000);
  const hugeMs = Math.ceil((settings.hugeBytes / budget) * 1000);
  return {
    drainBytesPerSec,
    fraction,
    bigGets,
    bigEveryMs: Math.max(1000, bigMs),
    hugeEveryMs: Math.max(1000, hugeMs),
    bigFits: bigMs <= faultMs,
    hugeFits: hugeMs <= faultMs,
  };
}

/** Bytes per second the 1 MB fault asks of all workers together (the cached get of each burst included). */
export function bigDemand(plan: LoadPlan, workers: number): number {
  return (workers * (plan.bigGets + 1) * settings.bigBytes * 1000) / plan.bigEveryMs;
}

/** Bytes per second the 64 MB fault asks of worker 0. */
export function hugeDemand(plan: LoadPlan): number {
  return (settings.hugeBytes * 1000) / plan.hugeEveryMs;
}

/** `123 MB/s`, `0.4 MB/s`. */
export function rate(bytesPerSec: number): string {
  const mbs = bytesPerSec / 1024 / 1024;
  return `${mbs < 10 ? mbs.toFixed(1) : Math.round(mbs).toLocaleString("en-US")} MB/s`;
}

/** A load fault as it ran: what the workers asked and what arrived. */
export interface LoadRun {
  name: string;
  requests: number;
  bytes: number;
  errors: number;
  /** Workers that answered `settle` with every request settled, out of `workers`. */
  settledWorkers: number;
  workers: number;
  /** The slowest worker's time from its first request to its last reply. */
  ms: number;
}

/** Sum the workers' answers to `settle` (a worker that never answered counts as unsettled). */
export function loadRun(name: string, workers: number, answers: readonly LoadReport[]): LoadRun {
  return {
    name,
    requests: answers.reduce((a, r) => a + r.requests, 0),
    bytes: answers.reduce((a, r) => a + r.bytes, 0),
    errors: answers.reduce((a, r) => a + r.errors, 0),
    settledWorkers: answers.filter((r) => r.settled).length,
    workers,
    ms: Math.max(0, ...answers.map((r) => r.ms)),
  };
}

/** `84 requests, 80 MB arrived in 3,120 ms (26 MB/s), 0 failed`. */
export function describeRun(run: LoadRun): string {
  const mbs = Math.round(run.bytes / 1024 / 1024).toLocaleString("en-US");
  return `${run.requests.toLocaleString("en-US")} requests, ${mbs} MB arrived in ${
    run.ms.toLocaleString("en-US")
  } ms (${rate(run.ms > 0 ? (run.bytes * 1000) / run.ms : 0)}), ${run.errors.toLocaleString("en-US")} failed${
    run.settledWorkers < run.workers ? `, ${run.workers - run.settledWorkers} workers still waiting` : ""
  }`;
}
