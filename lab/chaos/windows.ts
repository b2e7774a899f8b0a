/**
 * A chaos population's measurement windows and its gets in flight (a worker
 * process, the workerd driver): each get is counted in the window it settles
 * in, a get unsettled past the hang bound is reported once as a hang, and
 * every finished window is sent to the parent in order.
 *
 * @module
 */
import { settings } from "./config.ts";
import type { Report, Window } from "./protocol.ts";

/** A get in flight: when it started, and whether it was already reported as a hang. */
export interface Call {
  readonly startedAt: number;
  hung: boolean;
}

/** The windows of one population, keyed by index from its run's `t0`. */
export class Windows<C extends Call = Call> {
  readonly #windows = new Map<number, Window>();
  readonly #t0: number;
  readonly #send: (report: Report) => void;
  /** The gets in flight. */
  readonly pending = new Set<C>();

  constructor(t0: number, send: (report: Report) => void) {
    this.#t0 = t0;
    this.#send = send;
  }

  /** The index of the window `epochMs` falls in. */
  indexOf(epochMs: number): number {
    return Math.floor((epochMs - this.#t0) / settings.windowMs);
  }

  /** The window now, created on first use. */
  now(): Window {
    const i = this.indexOf(Date.now());
    let w = this.#windows.get(i);
    if (w === undefined) {
      this.#windows.set(
        i,
        w = { t: "win", i, gets: 0, errors: {}, messages: {}, latencies: [], backwards: 0, wrong: 0 },
      );
    }
    return w;
  }

  /**
   * Report the gets past the hang bound (every one still pending with `all`), then send the finished windows
   * (every window with `all`), each with `extra` (the process' RSS and counters, read once).
   */
  flush(all: boolean, extra: Partial<Window> = {}): void {
    const now = Date.now();
    for (const call of this.pending) {
      if (!call.hung && (all || now - call.startedAt > settings.hangMs)) {
        call.hung = true;
        this.#send({ t: "hang", i: this.indexOf(call.startedAt) });
      }
    }
    const current = this.indexOf(now);
    for (const [i, w] of [...this.#windows].sort((a, b) => a[0] - b[0])) {
      if (!all && i >= current) continue;
      this.#windows.delete(i);
      this.#send({ ...w, ...extra });
    }
  }
}
