/**
 * One `get` call's deadline: the caller's signal and `timeoutMs` folded into
 * one AbortSignal that everything the call waits on obeys.
 *
 * @module
 */
import { clearTimeout, setTimeout } from "node:timers";
import { TimeoutError } from "../resp/errors.ts";

/**
 * The signal of calls without a signal or timeout, and of background
 * refreshes: it never aborts. Most gets are hits, and an AbortController per
 * call (plus the listeners hung on it) is measurable garbage; code that would
 * listen to a signal skips this one.
 */
export const NEVER: AbortSignal = new AbortController().signal;

/** The signal of one call, aborted by the caller's signal or by its timeout. */
export class CallScope {
  readonly signal: AbortSignal;
  readonly #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #user: AbortSignal | undefined;
  readonly #onUserAbort: (() => void) | undefined;
  /** The TimeoutError this scope aborted with, once its timeout fired. */
  timedOut: TimeoutError | undefined;

  constructor(key: string, signal: AbortSignal | undefined, timeoutMs: number | undefined) {
    if (timeoutMs === undefined) {
      // The caller's own signal is all there is to obey: no copy needed.
      this.signal = signal ?? NEVER;
      return;
    }
    const controller = new AbortController();
    this.signal = controller.signal;
    if (signal !== undefined) {
      this.#user = signal;
      if (signal.aborted) controller.abort(signal.reason);
      else {
        this.#onUserAbort = () => controller.abort(signal.reason);
        signal.addEventListener("abort", this.#onUserAbort, { once: true });
      }
    }
    if (!controller.signal.aborted) {
      this.#timer = setTimeout(() => {
        this.timedOut = new TimeoutError(`Cannot get ${key}: no answer within timeoutMs (${timeoutMs} ms)`, timeoutMs);
        controller.abort(this.timedOut);
      }, timeoutMs);
    }
  }

  /** Stop the timer and stop listening to the caller's signal. */
  dispose(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#onUserAbort !== undefined) this.#user?.removeEventListener("abort", this.#onUserAbort);
  }
}

/**
 * Settle with `promise`, or reject with `signal.reason` as soon as `signal`
 * aborts. The promise itself keeps running (its owner tracks it).
 */
export function race<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal === NEVER) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
