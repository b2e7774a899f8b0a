/**
 * A cache's life: the calls running now, and its close. `close()` refuses
 * new calls at once and resolves once every call that entered before has
 * returned, so nothing a call starts (a load, a refresh) can begin after it.
 *
 * @module
 */
import { clearTimeout, setImmediate, setTimeout } from "node:timers";
import { ClosedError } from "../../errors.ts";
import type { CallDeadline } from "./deadline.ts";

/** The calls of one cache between their entry and their return. */
export class Lifecycle {
  /** Set once `close()` was called. */
  closing: Promise<void> | undefined;
  #active = 0;
  #idle: (() => void) | undefined;
  /** The deadlines of the calls waiting now (a miss's fill, a batch, a warm). */
  readonly running: Set<CallDeadline> = new Set();

  /** Throw a `ClosedError` naming `method` once the cache is closing. */
  check(method: string): void {
    if (this.closing !== undefined) throw new ClosedError(method);
  }

  /** Count a call to `method` in; throws a `ClosedError` naming it once the cache is closing. */
  enter(method: string): void {
    this.check(method);
    this.#active++;
  }

  /** Count a call out. */
  leave(): void {
    if (--this.#active === 0) this.#idle?.();
  }

  // Counted from its entry, not from its fill: close() must also wait for a
  // call still reading, or it would load or refresh after close() resolved.
  /** Run `body` as one call to `method`. */
  async run<R>(method: string, body: () => Promise<R>): Promise<R> {
    this.enter(method);
    try {
      return await body();
    } finally {
      this.leave();
    }
  }

  /**
   * Refuse new calls, wait for the running ones and then `drain` (the work
   * they started), then `finish`; once, however often called. With
   * `timeoutMs`, the wait ends then: every call still waiting is ended with
   * a `ClosedError` (its signal fires, so its loader's does and its lease
   * waits end), and `finish` runs without waiting for work that ignores it.
   */
  close(drain: () => Promise<void>, finish: () => Promise<void>, timeoutMs?: number): Promise<void> {
    this.closing ??= (async () => {
      const settled = (async () => {
        if (this.#active > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
        await drain();
      })();
      if (timeoutMs === undefined || !(await outlasts(settled, timeoutMs))) {
        await settled;
      } else {
        for (const deadline of [...this.running]) deadline.close();
        // A turn for the callers just ended to leave before what they held is released.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      await finish();
    })();
    return this.closing;
  }
}

// Whether `work` is still running `ms` from now.
function outlasts(work: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(true), ms);
    work.then(
      () => {
        clearTimeout(timer);
        resolve(false);
      },
      () => {
        clearTimeout(timer);
        resolve(false);
      },
    );
  });
}
