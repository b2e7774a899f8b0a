/**
 * A cache's life: the calls running now, and its close. `close()` refuses
 * new calls at once and resolves once every call that entered before has
 * returned, so nothing a call starts (a load, a refresh) can begin after it.
 *
 * @module
 */
import { closedError } from "./core.ts";

/** The calls of one cache between their entry and their return. */
export class Lifecycle {
  /** Set once `close()` was called. */
  closing: Promise<void> | undefined;
  #active = 0;
  #idle: (() => void) | undefined;

  /** Count a call in; throws once the cache is closing. */
  enter(): void {
    if (this.closing !== undefined) throw closedError();
    this.#active++;
  }

  /** Count a call out. */
  leave(): void {
    if (--this.#active === 0) this.#idle?.();
  }

  // Counted from its entry, not from its fill: close() must also wait for a
  // call still reading, or it would load or refresh after close() resolved.
  /** Run `body` as one call. */
  async run<R>(body: () => Promise<R>): Promise<R> {
    this.enter();
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
