/**
 * Counters and the `onEvent` hook. Every counter moves only through an event,
 * so what a metrics hook sees and what `stats()` reports always agree.
 *
 * @module
 */
import type { CacheEvent, CacheStats } from "../types.ts";

const COUNTER: Partial<Record<CacheEvent["type"], keyof CacheStats>> = {
  "hit": "hits",
  "miss": "misses",
  "stale": "stale",
  "early-refresh": "earlyRefreshes",
  "load-start": "loads",
  "lease-won": "leasesWon",
  "wait": "waits",
  "late-publish": "lateRejected",
  "coalesced": "coalesced",
  "shed": "shed",
  "refresh-dropped": "refreshesDropped",
  "timeout": "timeouts",
  "decode-error": "decodeErrors",
  "refresh-error": "refreshErrors",
};

/** A fresh set of counters, all zero. */
export function emptyStats(): CacheStats {
  return {
    hits: 0,
    misses: 0,
    stale: 0,
    earlyRefreshes: 0,
    loads: 0,
    loadErrors: 0,
    leasesWon: 0,
    waits: 0,
    lateRejected: 0,
    coalesced: 0,
    shed: 0,
    timeouts: 0,
    decodeErrors: 0,
    refreshesDropped: 0,
    refreshErrors: 0,
    eventErrors: 0,
  };
}

/** Counts events and forwards them to the user's hook. */
export class Recorder {
  readonly #stats = emptyStats();
  readonly #onEvent: ((event: CacheEvent) => unknown) | undefined;

  constructor(onEvent: ((event: CacheEvent) => unknown) | undefined) {
    this.#onEvent = onEvent;
  }

  /** Count `event` and pass it to `onEvent`; a throwing hook never breaks a `get`. */
  emit(event: CacheEvent): void {
    const counter = event.type === "load-end" ? ("error" in event ? "loadErrors" : undefined) : COUNTER[event.type];
    if (counter !== undefined) this.#stats[counter]++;
    const hook = this.#onEvent;
    if (hook === undefined) return;
    try {
      const result = hook(event);
      // An async hook's rejection would otherwise surface as an unhandled rejection.
      if (result instanceof Promise) result.catch(() => this.#stats.eventErrors++);
    } catch {
      // Metrics must not break reads; the failure is still counted.
      this.#stats.eventErrors++;
    }
  }

  /** A copy of the counters. */
  snapshot(): CacheStats {
    return { ...this.#stats };
  }
}
