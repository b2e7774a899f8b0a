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
  /** Raw GETs of the 1 MB value each worker sends at once, every `bigEveryMs`. */
  bigGets: number;
  bigEveryMs: number;
  /** How often worker 0 gets the 64 MB value. */
  hugeEveryMs: number;
}

/**
 * Size the load faults to `fraction` of the measured drain: at most
 * `settings.bigBurst` gets of the 1 MB value per worker per second (the
 * fault as issue 12 asked it), at least one; the 64 MB value keeps its
 * size (it is what makes its write outlast its lease) and is asked less
 * often, never more than once a second.
 */
export function planLoads(drainBytesPerSec: number, fraction: number, workers: number): LoadPlan {
  if (!(fraction > 0 && fraction <= 1)) {
    throw new RangeError(`Cannot size the chaos load: 'fraction' must be in (0, 1], got ${fraction}`);
  }
  if (!(drainBytesPerSec > 0)) {
    throw new RangeError(`Cannot size the chaos load: the drain must be positive, got ${drainBytesPerSec} B/s`);
  }
  const bigEveryMs = 1000;
  const budget = drainBytesPerSec * fraction;
  const perWorker = (budget * (bigEveryMs / 1000)) / workers;
  const bigGets = Math.max(1, Math.min(settings.bigBurst, Math.floor(perWorker / settings.bigBytes)));
  const hugeEveryMs = Math.max(1000, Math.ceil((settings.hugeBytes / budget) * 1000));
  return { drainBytesPerSec, fraction, bigGets, bigEveryMs, hugeEveryMs };
}

/** Bytes per second the 1 MB fault asks of all workers together. */
export function bigDemand(plan: LoadPlan, workers: number): number {
  return (workers * plan.bigGets * settings.bigBytes * 1000) / plan.bigEveryMs;
}

/** Bytes per second the 64 MB fault asks of worker 0. */
export function hugeDemand(plan: LoadPlan): number {
  return (settings.hugeBytes * 1000) / plan.hugeEveryMs;
}

/** `123 MB/s`. */
export function rate(bytesPerSec: number): string {
  return `${Math.round(bytesPerSec / 1024 / 1024).toLocaleString("en-US")} MB/s`;
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
