/**
 * One `get` call's deadline: the caller's signal and `timeoutMs` folded into
 * one AbortSignal that everything the call waits on obeys. Built only when
 * the call has to wait: a hit answered at once never asks for the signal, so
 * it pays no AbortController and no timer.
 *
 * @module
 */
import { clearTimeout, setTimeout } from "node:timers";
import { onAbort } from "../../../resp/shared/mod.ts";
import { isTimeoutError, TimeoutError, timeoutMessage } from "../../../resp/errors.ts";

/** The signal of one call, aborted by the caller's signal or by its timeout (counted from the call's start). */
export class CallDeadline {
  readonly #key: string;
  readonly #caller: AbortSignal | undefined;
  readonly #timeoutMs: number | undefined;
  readonly #startedAt: number;
  #controller: AbortController | undefined;
  #never: AbortSignal | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stop: (() => void) | undefined;
  /** The TimeoutError this deadline aborted with, once its timeout fired. */
  timedOut: TimeoutError | undefined;

  /**
   * @param key names what the call waits for, in the timeout's message.
   * @param signal the caller's signal, if any.
   * @param timeoutMs the call's `timeoutMs`, if any.
   * @param startedAt when the call started, on `performance.now()`: timers run on real time, whatever clock the
   *   cache was given.
   */
  constructor(key: string, signal: AbortSignal | undefined, timeoutMs: number | undefined, startedAt: number) {
    this.#key = key;
    this.#caller = signal;
    this.#timeoutMs = timeoutMs;
    this.#startedAt = startedAt;
  }

  /** The call's signal; the first read of it starts the timer (what is left of `timeoutMs`). */
  get signal(): AbortSignal {
    // The caller's own signal is all there is to obey: no copy needed.
    // Without one, a signal of this call's own that never aborts: workerd ties a signal to its request.
    if (this.#timeoutMs === undefined) return this.#caller ?? (this.#never ??= new AbortController().signal);
    return (this.#controller ?? this.#arm()).signal;
  }

  #arm(): AbortController {
    const controller = (this.#controller = new AbortController());
    const caller = this.#caller;
    const timeoutMs = this.#timeoutMs!;
    if (caller?.aborted) {
      controller.abort(caller.reason);
      return controller;
    }
    this.#stop = onAbort(caller, () => controller.abort(caller!.reason));
    const left = Math.max(0, timeoutMs - (performance.now() - this.#startedAt));
    this.#timer = setTimeout(() => {
      this.timedOut = new TimeoutError(timeoutMessage(`The get of ${this.#key}`, "timeoutMs", timeoutMs), timeoutMs, {
        setting: "timeoutMs",
        timeoutMs,
      });
      controller.abort(this.timedOut);
    }, left);
    return controller;
  }

  /** Stop the timer and stop listening to the caller's signal (nothing to do if the signal was never asked for). */
  dispose(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#stop?.();
  }
}

/**
 * A deadline of ours, or the DOMException of `AbortSignal.timeout()`: the
 * caller ran out of time rather than cancelling (it still prefers a stale
 * value to nothing).
 */
export function isDeadline(reason: unknown): boolean {
  return isTimeoutError(reason) || (reason instanceof Error && reason.name === "TimeoutError");
}
