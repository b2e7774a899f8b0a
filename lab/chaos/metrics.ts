/**
 * The parent's view of the run: every worker's windows, kept per worker (for
 * recovery, which each worker must reach) and summed per phase (for the
 * table). Windows arrive a little after they close, so phases are summarised
 * once the workers have stopped and every window is in.
 *
 * @module
 */
import { settings } from "./config.ts";
import type { Report, Window } from "./protocol.ts";

/** One row of the table, before formatting. */
export interface PhaseSummary {
  gets: number;
  errors: Record<string, number>;
  /** Rejections by class and masked message. */
  messages: Record<string, number>;
  p50: number;
  p99: number;
  max: number;
  hangs: number;
  backwards: number;
  /** Lower versions after a master switch, from writes the old master took (see the protocol's `lost`). */
  lost: number;
  wrong: number;
  /** Publishes rejected as late (`stats().lateRejected`), all workers. */
  late: number;
  /** Loads `limit()` refused (`stats().shed`: callers and background refreshes), all workers. */
  shed: number;
  /** Slowest worker's time from the fault's end to its first window back at baseline; undefined if one never got there. */
  recoverMs: number | undefined;
  /** Summed worker RSS at the last window before the phase and at its last window, in bytes. */
  rssBefore: number;
  rssAfter: number;
}

export class Collector {
  readonly #workers: Map<number, Window>[];
  readonly #hangs = new Map<number, number>();
  /** Closes that never finished, by what. */
  readonly closeHangs: string[] = [];
  /** Workers' remarks not yet attached to a phase. */
  readonly notes: string[] = [];

  constructor(workers: number) {
    this.#workers = Array.from({ length: workers }, () => new Map());
  }

  add(worker: number, report: Report): void {
    if (report.t === "win") this.#workers[worker]!.set(report.i, report);
    else if (report.t === "hang") {
      if (report.what !== undefined) this.closeHangs.push(`worker ${worker}: ${report.what}`);
      else this.#hangs.set(report.i, (this.#hangs.get(report.i) ?? 0) + 1);
    } else if (report.t === "note") this.notes.push(`worker ${worker}: ${report.text}`);
  }

  /** Error rate over windows [from, to) of all workers. */
  errorRate(from: number, to: number): number {
    let gets = 0;
    let errors = 0;
    for (const w of this.#workers) {
      for (let i = from; i < to; i++) {
        const win = w.get(i);
        gets += win?.gets ?? 0;
        errors += sum(win?.errors ?? {});
      }
    }
    return gets === 0 ? 0 : errors / gets;
  }

  /** Summary of windows [from, to); recovery is looked for from window `faultEnd` on. */
  summarise(from: number, to: number, faultEnd: number, baselineRate: number): PhaseSummary {
    const errors: Record<string, number> = {};
    const messages: Record<string, number> = {};
    const latencies: number[] = [];
    let gets = 0, hangs = 0, backwards = 0, lost = 0, wrong = 0, late = 0, shed = 0, rssBefore = 0, rssAfter = 0;
    let recoverMs: number | undefined = 0;
    const threshold = Math.max(2 * baselineRate, settings.recoveredErrorRate);
    for (const w of this.#workers) {
      for (let i = from; i < to; i++) {
        const win = w.get(i);
        if (win === undefined) continue;
        gets += win.gets;
        backwards += win.backwards;
        lost += win.lost ?? 0;
        wrong += win.wrong;
        for (const l of win.latencies) latencies.push(l);
        for (const [k, n] of Object.entries(win.errors)) errors[k] = (errors[k] ?? 0) + n;
        for (const [k, n] of Object.entries(win.messages)) messages[k] = (messages[k] ?? 0) + n;
      }
      const before = last(w, from);
      const after = last(w, to);
      late += (after?.late ?? 0) - (before?.late ?? 0);
      shed += (after?.shed ?? 0) - (before?.shed ?? 0);
      rssBefore += before?.rss ?? 0;
      rssAfter += after?.rss ?? 0;
      let back: number | undefined;
      for (let i = faultEnd; i < to && back === undefined; i++) {
        const win = w.get(i);
        if (win !== undefined && win.gets > 0 && sum(win.errors) / win.gets <= threshold) back = i;
      }
      recoverMs = back === undefined || recoverMs === undefined
        ? undefined
        : Math.max(recoverMs, (back - faultEnd) * settings.windowMs);
    }
    for (let i = from; i < to; i++) hangs += this.#hangs.get(i) ?? 0;
    latencies.sort((a, b) => a - b);
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
    return {
      gets,
      errors,
      messages,
      p50: at(0.5),
      p99: at(0.99),
      max: latencies[latencies.length - 1] ?? 0,
      hangs,
      backwards,
      lost,
      wrong,
      late,
      shed,
      recoverMs,
      rssBefore,
      rssAfter,
    };
  }

  /** Hangs in the whole run, the drain at the end included. */
  get hangs(): number {
    let n = 0;
    for (const c of this.#hangs.values()) n += c;
    return n;
  }
}

function sum(counts: Record<string, number>): number {
  let n = 0;
  for (const c of Object.values(counts)) n += c;
  return n;
}

/** The worker's last window before `before`. */
function last(w: Map<number, Window>, before: number): Window | undefined {
  for (let i = before - 1; i >= before - 40; i--) {
    const win = w.get(i);
    if (win !== undefined) return win;
  }
  return undefined;
}
