/**
 * One `get` call's deadline: the caller's signal and `timeoutMs` folded into
 * one AbortSignal that everything the call waits on obeys.
 *
 * @module
 */
import { clearTimeout, setTimeout } from "node:timers";
import { onAbort } from "../../resp/shared/mod.ts";
import { isTimeoutError, TimeoutError } from "../../resp/errors.ts";

/** The signal of one call, aborted by the caller's signal or by its timeout. */
export class CallScope {
  /** Undefined for a call without a signal or timeout: nothing can abort it. */
  readonly signal: AbortSignal | undefined;
  readonly #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #stop: (() => void) | undefined;
  /** The TimeoutError this scope aborted with, once its timeout fired. */
  timedOut: TimeoutError | undefined;

  constructor(key: string, signal: AbortSignal | undefined, timeoutMs: number | undefined) {
    if (timeoutMs === undefined) {
      // The caller's own signal is all there is to obey: no copy needed.
      this.signal = signal;
      return;
    }
    const controller = new AbortController();
    this.signal = controller.signal;
    if (signal?.aborted) controller.abort(signal.reason);
    else this.#stop = onAbort(signal, () => controller.abort(signal!.reason));
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
