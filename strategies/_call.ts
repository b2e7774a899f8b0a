/**
 * One `get` call's deadline: the caller's signal and `timeoutMs` folded into
 * one AbortSignal that everything the call waits on obeys.
 *
 * @module
 */
import { clearTimeout, setTimeout } from "node:timers";
import { TimeoutError } from "../resp/errors.ts";

/** The signal of one call, aborted by the caller's signal or by its timeout. */
export class CallScope {
  readonly #controller = new AbortController();
  readonly #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #user: AbortSignal | undefined;
  readonly #onUserAbort: (() => void) | undefined;
  /** The TimeoutError this scope aborted with, once its timeout fired. */
  timedOut: TimeoutError | undefined;

  constructor(key: string, signal: AbortSignal | undefined, timeoutMs: number | undefined) {
    const controller = this.#controller;
    if (signal !== undefined) {
      this.#user = signal;
      if (signal.aborted) controller.abort(signal.reason);
      else {
        this.#onUserAbort = () => controller.abort(signal.reason);
        signal.addEventListener("abort", this.#onUserAbort, { once: true });
      }
    }
    if (timeoutMs !== undefined && !controller.signal.aborted) {
      this.#timer = setTimeout(() => {
        this.timedOut = new TimeoutError(`Cannot get ${key}: no answer within timeoutMs (${timeoutMs} ms)`, timeoutMs);
        controller.abort(this.timedOut);
      }, timeoutMs);
    }
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Stop the timer and stop listening to the caller's signal. */
  dispose(): void {
    clearTimeout(this.#timer);
    if (this.#onUserAbort !== undefined) this.#user?.removeEventListener("abort", this.#onUserAbort);
  }
}

/**
 * Settle with `promise`, or reject with `signal.reason` as soon as `signal`
 * aborts. The promise itself keeps running (its owner tracks it).
 */
export function race<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
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
