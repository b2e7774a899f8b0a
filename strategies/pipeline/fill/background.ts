/**
 * Work a cache owns beyond its callers: loads whose callers left, and
 * background refreshes (bounded in number, one per key). `close()` drains
 * them; none is ever an untracked floating promise.
 *
 * @module
 */
import type { CacheEvent } from "../../events.ts";

/** The tracked work of one cache. */
export class BackgroundWork {
  readonly #maxRefreshes: number;
  readonly #emit: (event: CacheEvent) => void;
  readonly #refreshing = new Set<string>();
  readonly #inflight = new Set<Promise<unknown>>();
  readonly #waitUntil: ((work: Promise<unknown>) => void) | undefined;

  constructor(
    maxRefreshes: number,
    emit: (event: CacheEvent) => void,
    waitUntil?: (work: Promise<unknown>) => void,
  ) {
    this.#maxRefreshes = maxRefreshes;
    this.#emit = emit;
    this.#waitUntil = waitUntil;
  }

  /** True while tracked work runs: only then can a strategy hold a load for a key (a hit supersedes none otherwise). */
  get busy(): boolean {
    return this.#inflight.size > 0;
  }

  /**
   * Keep `promise` until it settles, so `drain()` waits for it; with a
   * `waitUntil`, hand it over too (settled either way: its rejection is
   * its caller's, or counted).
   */
  track<P extends Promise<unknown>>(promise: P): P {
    this.#inflight.add(promise);
    const settled = promise.then(() => this.#inflight.delete(promise), () => this.#inflight.delete(promise));
    this.#waitUntil?.(settled);
    return promise;
  }

  /** {@linkcode refreshMany} of one key: `run` refreshes `key`; `early` counts it as an early refresh when it starts. */
  refresh(key: string, run: () => Promise<unknown>, early: boolean): void {
    this.refreshMany([key], run, early);
  }

  /**
   * Start `run` as one background refresh of several keys (a `getMany`
   * batch, or one key): it gets the keys not already refreshing, up to
   * `maxRefreshes` in all (the others are dropped, counted). A failure is
   * counted once per key, as `refresh-error`; the stale entries keep their
   * deadlines. With `early`, each key that starts is counted as an early refresh.
   */
  refreshMany(keys: readonly string[], run: (claimed: readonly string[]) => Promise<unknown>, early: boolean): void {
    const claimed: string[] = [];
    for (const key of keys) {
      if (this.#refreshing.has(key)) continue;
      if (this.#refreshing.size >= this.#maxRefreshes) {
        this.#emit({ type: "refresh-dropped", key });
        continue;
      }
      this.#refreshing.add(key);
      claimed.push(key);
      if (early) this.#emit({ type: "early-refresh", key });
    }
    if (claimed.length === 0) return;
    this.track(
      run(claimed)
        .then(
          () => {},
          (error: unknown) => {
            for (const key of claimed) this.#emit({ type: "refresh-error", key, error });
          },
        )
        .finally(() => {
          for (const key of claimed) this.#refreshing.delete(key);
        }),
    );
  }

  /** Resolve once nothing tracked is running (work started while draining included). */
  async drain(): Promise<void> {
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
  }
}
