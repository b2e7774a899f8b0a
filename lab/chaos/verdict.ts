/**
 * The exit code's reasons: the four hard failures, never errors during a
 * fault (those are what the table measures). A hang, a value going backwards
 * (or another key's value, worse still), a connection left behind after a
 * fault or after close(), a worker that does not recover or dies, and a load
 * fault whose requests never all arrived. Recovery is judged from the end of
 * each fault as it ran: a load fault ends when its last reply has arrived,
 * so what the machine takes to drain it is not held against the code.
 *
 * Recovery is measured against the baseline (the error rate with no fault).
 * When the baseline itself fails, the machine could not carry the run's load
 * with nothing broken, and a fault's slow recovery says nothing about the
 * code: such a run is inconclusive, not passed and not failed, unless a hard
 * check failed (those hold on any machine: a value going backwards, another
 * key's value, a hang, a leaked connection).
 *
 * @module
 */
import { settings } from "./config.ts";
import type { LoadRun } from "./load.ts";
import type { Connections } from "./probe.ts";
import type { Row } from "./table.ts";

export interface VerdictInput {
  rows: Row[];
  /** Gets unsettled after the hang bound, in the whole run, and closes that never finished. */
  hangs: number;
  closeHangs: string[];
  /** Worker connections at baseline: what every phase must end with at most. */
  expected: number;
  /** What remained after every worker closed its caches and clients. */
  left: Connections;
  /** Workers that died or would not stop. */
  failedWorkers: string[];
  /** How long each worker had to recover after each fault. */
  recoverMs: number;
  /** The load faults as they ran. */
  loads: LoadRun[];
  /** The baseline's error rate (share of its gets that failed, no fault running). */
  baselineRate: number;
}

/** What the run found: hard failures, and what could not be judged on this machine. Both empty: PASS. */
export interface Verdict {
  failures: string[];
  /** Why recovery could not be judged (the baseline failed), with the recoveries it leaves unjudged. */
  inconclusive: string[];
}

/** Every failure, one line each; a slow recovery is inconclusive, not a failure, when the baseline failed. */
export function verdict(input: VerdictInput): Verdict {
  const failures: string[] = [];
  const unjudged: string[] = [];
  const baselineFailed = input.baselineRate > settings.recoveredErrorRate;
  if (input.hangs > 0) failures.push(`${input.hangs} gets never settled within ${settings.hangMs} ms`);
  failures.push(...input.closeHangs.map((c) => `hang: ${c}`));
  for (const r of input.rows) {
    if (r.summary.backwards > 0) failures.push(`${r.name}: ${r.summary.backwards} values went backwards`);
    if (r.summary.wrong > 0) failures.push(`${r.name}: ${r.summary.wrong} gets were served another key's value`);
    if (r.fault && r.summary.recoverMs === undefined) {
      (baselineFailed ? unjudged : failures).push(`${r.name}: a worker did not recover within ${input.recoverMs} ms`);
    }
    if (r.after.workers > input.expected || r.after.proxy > input.expected) {
      failures.push(
        `${r.name}: connections leaked (${r.after.workers} on the server, ${r.after.proxy} in the proxy, expected ${input.expected})`,
      );
    }
  }
  if (input.left.workers > 0 || input.left.proxy > 0) {
    failures.push(
      `after close(): ${input.left.workers} worker connections on the server, ${input.left.proxy} in the proxy`,
    );
  }
  for (const l of input.loads) {
    if (l.settledWorkers < l.workers) {
      failures.push(
        `${l.name}: ${
          l.workers - l.settledWorkers
        } of ${l.workers} workers still had requests of the fault pending ${settings.hangMs} ms after it ended`,
      );
    }
  }
  failures.push(...input.failedWorkers);
  const inconclusive = baselineFailed
    ? [
      `the baseline failed: ${pct(input.baselineRate)} of its gets failed with no fault running (more than ${
        pct(settings.recoveredErrorRate)
      }): this machine could not carry the run's load, so recovery is not judged`,
      ...unjudged,
    ]
    : [];
  return { failures, inconclusive };
}

function pct(rate: number): string {
  return `${(rate * 100).toFixed(2)}%`;
}
