/**
 * A cache's life: the calls running now, and its close. `close()` refuses
 * new calls at once and resolves once every call that entered before has
 * returned, so nothing a call starts (a load, a refresh) can begin after it.
 *
 * @module
 */
import { ClosedError } from "../../errors.ts";

/** The calls of one cache between their entry and their return. */
export class Lifecycle {
  /** Set once `close()` was called. */
  closing: Promise<void> | undefined;
  #active = 0;
  #idle: (() => void) | undefined;

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

  /** Refuse new calls, wait for the running ones, then `finish` (once, however often called). */
  close(finish: () => Promise<void>): Promise<void> {
    this.closing ??= (async () => {
      if (this.#active > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
      await finish();
    })();
    return this.closing;
  }
}
