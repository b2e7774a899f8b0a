/**
 * Errors a cache caller may branch on: {@linkcode OverloadedError} when
 * `limit()` shed the call, and {@linkcode TimeoutError} (shared with the RESP
 * client) when a wait or the call's own timeout ran out.
 *
 * @module
 */
import { brand, hasBrand } from "../resp/_brand.ts";
import type { HerdlessErrorOptions } from "../resp/errors.ts";

export { isTimeoutError, TimeoutError } from "../resp/errors.ts";

/**
 * `limit()` refused to start an origin load: `concurrency` loads were already
 * in flight and none finished within `queueMs`. The origin was not called.
 *
 * @example Shed load gracefully
 * ```ts
 * import { isOverloadedError, OverloadedError } from "@herdless/herdless";
 * const error = new OverloadedError("Cannot load herdless:{x}:data: 4 loads in flight", 4, 0);
 * console.log(isOverloadedError(error), error.concurrency); // true 4
 * ```
 */
export class OverloadedError extends Error {
  /** The limit that was reached. */
  readonly concurrency: number;
  /** How long the call queued before it was shed, in ms. */
  readonly queuedMs: number;
  /**
   * Create the error (`limit()` does; an adapter or a test may too).
   *
   * @param message what was refused and why.
   * @param concurrency the limit that was reached.
   * @param queuedMs how long the call queued, in ms.
   * @param options the `cause`, if any.
   */
  constructor(message: string, concurrency: number, queuedMs: number, options?: HerdlessErrorOptions) {
    super(message, options);
    this.name = "OverloadedError";
    brand(this, "OverloadedError");
    this.concurrency = concurrency;
    this.queuedMs = queuedMs;
  }
}

/**
 * True when `e` is an {@linkcode OverloadedError} from any copy of herdless
 * (a Deno copy and an npm copy may both be loaded, so `instanceof` alone is not enough).
 *
 * @example Works across package copies
 * ```ts
 * import { isOverloadedError } from "@herdless/herdless";
 * console.log(isOverloadedError(new Error("x"))); // false
 * ```
 */
export function isOverloadedError(e: unknown): e is OverloadedError {
  return hasBrand(e, "OverloadedError");
}
