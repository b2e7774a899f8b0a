/**
 * One local waiter's interest in one key: woken by an announcement (pub/sub
 * or an invalidation), by its timer, or rejected by its caller's signal.
 *
 * @module
 */
import { clearTimeout, setTimeout } from "node:timers";
import { onAbort } from "../../../resp/shared/mod.ts";
import type { Ticket } from "../../contract.ts";

/** One local waiter's interest in one data key. */
export class WakeupTicket implements Ticket {
  #woken = false;
  #resolve: (() => void) | undefined;
  readonly #unwatch: () => void;

  constructor(unwatch: () => void) {
    this.#unwatch = unwatch;
  }

  /** Called by the hub when the key was announced. */
  wake(): void {
    this.#woken = true;
    this.#resolve?.();
  }

  /** Forget earlier announcements: call just before reading the key. */
  arm(): void {
    this.#woken = false;
  }

  /**
   * Resolve when the key is announced (at once if it was since `arm`) or
   * after `ms`; reject with `signal.reason` when `signal` aborts.
   */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.#woken) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        stop();
        this.#resolve = undefined;
      };
      const stop = onAbort(signal, () => {
        done();
        reject(signal.reason);
      });
      const timer = setTimeout(() => {
        done();
        resolve();
      }, ms);
      this.#resolve = () => {
        done();
        resolve();
      };
    });
  }

  /** Stop receiving announcements. */
  close(): void {
    this.#resolve = undefined;
    this.#unwatch();
  }
}
