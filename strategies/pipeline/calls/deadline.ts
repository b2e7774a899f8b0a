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
import { ClosedError } from "../../errors.ts";

/** Where the deadlines of the calls running now are kept, so that a close() whose time ran out can end them. */
export interface Running {
  add(deadline: CallDeadline): void;
  delete(deadline: CallDeadline): void;
}

/**
 * The signal of one call, aborted by the caller's signal, by its timeout
 * (counted from the call's start), or by a `close()` whose `timeoutMs` ran
 * out while the call still waited (with a `ClosedError`).
 */
export class CallDeadline {
  readonly #key: string;
  readonly #method: string;
  readonly #caller: AbortSignal | undefined;
  readonly #timeoutMs: number | undefined;
  readonly #startedAt: number;
  readonly #running: Running;
  #controller: AbortController | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stop: (() => void) | undefined;
  /** The TimeoutError this deadline aborted with, once its timeout fired. */
  timedOut: TimeoutError | undefined;

  /**
   * @param key names what the call waits for, in the timeout's message.
   * @param method the cache method called, named by a `ClosedError`.
   * @param signal the caller's signal, if any.
   * @param timeoutMs the call's `timeoutMs`, if any.
   * @param startedAt when the call started, on `performance.now()`: timers run on real time, whatever clock the
   *   cache was given.
   * @param running where the deadline is kept while its signal can still abort.
   */
  constructor(
    key: string,
    method: string,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
    startedAt: number,
    running: Running,
  ) {
    this.#key = key;
    this.#method = method;
    this.#caller = signal;
    this.#timeoutMs = timeoutMs;
    this.#startedAt = startedAt;
    this.#running = running;
  }

  /**
   * The call's signal, of its own (workerd ties a signal to the request that
   * made it: none is shared); the first read of it starts the timer (what
   * is left of `timeoutMs`) and listens to the caller's signal.
   */
  get signal(): AbortSignal {
    return (this.#controller ?? this.#arm()).signal;
  }

  #arm(): AbortController {
    const controller = (this.#controller = new AbortController());
    const caller = this.#caller;
    if (caller?.aborted) {
      controller.abort(caller.reason);
      return controller;
    }
    this.#stop = onAbort(caller, () => controller.abort(caller!.reason));
    const timeoutMs = this.#timeoutMs;
    if (timeoutMs !== undefined) {
      const left = Math.max(0, timeoutMs - (performance.now() - this.#startedAt));
      this.#timer = setTimeout(() => {
        this.timedOut = new TimeoutError(
          timeoutMessage(`The get of ${this.#key}`, "timeoutMs", timeoutMs),
          timeoutMs,
          { setting: "timeoutMs", timeoutMs },
        );
        controller.abort(this.timedOut);
      }, left);
    }
    this.#running.add(this);
    return controller;
  }

  /** A close() ran out of time while this call waited: it ends now, with a `ClosedError`. */
  close(): void {
    this.#controller?.abort(new ClosedError(this.#method));
  }

  /** Stop the timer and stop listening to the caller's signal (nothing to do if the signal was never asked for). */
  dispose(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#stop?.();
    if (this.#controller !== undefined) this.#running.delete(this);
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
