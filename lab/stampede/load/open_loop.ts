/**
 * A bounded open-loop request generator: request `i` is due at
 * `t0 + i / rate`, whether or not earlier ones have answered. Closed loops
 * (send the next when the last returns) slow down exactly when the cache
 * does, which hides a stampede; an open loop keeps arriving like users do.
 *
 * Bounded three ways so every run stops by itself: a fixed number of
 * requests, a cap on requests outstanding (a due request over the cap is
 * dropped and counted), and a drain deadline after the last one is issued.
 *
 * @module
 */
import { clearTimeout, setTimeout } from "node:timers";
import { isTimeoutError } from "../../../mod.ts";

/** What the generator sends and how hard. */
export interface LoadOptions {
  /** The shared start of the run (performance.now()). */
  t0: number;
  ratePerSec: number;
  durationMs: number;
  /** Due requests beyond this many outstanding are dropped (counted in `dropped`). */
  maxOutstanding: number;
  /** How long after the last request outstanding ones may take; any still open then are counted in `hung`. */
  drainMs: number;
  /** Send request number `i`. */
  request: (i: number) => Promise<unknown>;
}

/** What came back. Every issued request is counted exactly once in ok, errors, timeouts or hung. */
export interface LoadResult {
  issued: number;
  ok: number;
  errors: number;
  timeouts: number;
  dropped: number;
  hung: number;
  /** Caller latency of every settled request (success or failure), ms. */
  latencies: Float64Array;
  /** The last error message of each kind seen, for the report. */
  errorSamples: string[];
}

/** Run the load and resolve when every request has settled (or the drain deadline passed). */
export function runLoad(o: LoadOptions): Promise<LoadResult> {
  const total = Math.round((o.ratePerSec * o.durationMs) / 1000);
  const latencies = new Float64Array(total);
  const samples = new Map<string, string>();
  const r: LoadResult = { issued: 0, ok: 0, errors: 0, timeouts: 0, dropped: 0, hung: 0, latencies, errorSamples: [] };
  let settled = 0;
  let outstanding = 0;
  let due = 0;
  return new Promise<LoadResult>((resolve) => {
    let drainTimer: ReturnType<typeof setTimeout> | undefined;
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      if (drainTimer !== undefined) clearTimeout(drainTimer);
      r.hung = outstanding;
      r.latencies = latencies.subarray(0, settled);
      r.errorSamples = [...samples.values()];
      resolve(r);
    };
    const maybeDone = () => {
      if (due === total && outstanding === 0) finish();
    };
    const send = (i: number) => {
      const started = performance.now();
      outstanding++;
      r.issued++;
      let p: Promise<unknown>;
      try {
        p = o.request(i);
      } catch (error) {
        p = Promise.reject(error);
      }
      p.then(
        () => r.ok++,
        (error: unknown) => {
          if (isTimeoutError(error)) r.timeouts++;
          else r.errors++;
          const name = error instanceof Error ? error.name : typeof error;
          samples.set(name, error instanceof Error ? `${error.name}: ${error.message}` : String(error));
        },
      ).finally(() => {
        if (settled < total) latencies[settled++] = performance.now() - started;
        outstanding--;
        if (due === total && drainTimer !== undefined) maybeDone();
      });
    };
    const tick = () => {
      const elapsed = performance.now() - o.t0;
      const target = Math.min(total, Math.floor((elapsed * o.ratePerSec) / 1000));
      for (; due < target; due++) {
        if (outstanding >= o.maxOutstanding) r.dropped++;
        else send(due);
      }
      if (due < total) {
        // 1 ms steps: at 1,000 requests/s about one request per step, an even stream.
        setTimeout(tick, 1);
        return;
      }
      drainTimer = setTimeout(finish, o.drainMs);
      maybeDone();
    };
    tick();
  });
}

/** Nearest-rank percentiles of latencies in ms (zeros when there are none). */
export function percentiles(latencies: Float64Array): { p50: number; p99: number; max: number } {
  if (latencies.length === 0) return { p50: 0, p99: 0, max: 0 };
  const sorted = Float64Array.from(latencies).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return { p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1]! };
}
