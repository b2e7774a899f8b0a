/**
 * Counters, the `onEvent` hook and the `herdless:event` diagnostics
 * channel. Every counter moves only through an event, so what a metrics hook
 * sees and what `stats()` reports always agree. An event object is built
 * only when someone listens: a hit with no hook and no channel subscriber
 * costs one increment and one property read.
 *
 * @module
 */
import { eventChannel } from "../../../resp/shared/mod.ts";
import type { CacheEvent, CacheStats } from "../../events.ts";

type Counter = Exclude<keyof CacheStats, "nearEntries" | "invalidationMode">;

const COUNTER: Partial<Record<CacheEvent["type"], Counter>> = {
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
  "near-hit": "nearHits",
  "peek": "peeks",
  "set": "sets",
  "degraded": "degraded",
  "skip": "skips",
  "soft-timeout": "softTimeouts",
  "not-modified": "notModified",
  "invalid": "invalid",
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
    nearHits: 0,
    nearEntries: 0,
    nearInvalidations: 0,
    invalidationMode: 0,
    peeks: 0,
    sets: 0,
    degraded: 0,
    skips: 0,
    softTimeouts: 0,
    notModified: 0,
    invalid: 0,
  };
}

/** Events with only a type and a key: the hot ones, recorded without building an object when nobody listens. */
export type KeyEvent = "hit" | "miss" | "stale" | "near-hit" | "peek" | "set" | "coalesced" | "wait";

/** The counters of one cache, moved only by events, which it also delivers to `onEvent` and the `herdless:event` channel. */
export class Stats {
  readonly #stats = emptyStats();
  readonly #onEvent: ((event: CacheEvent) => unknown) | undefined;
  readonly #namespace: string;
  readonly #labelOf: ((key: string) => string | undefined) | undefined;

  /**
   * @param onEvent the user's hook, if any.
   * @param namespace the cache's namespace, added to what the channel publishes.
   * @param labelOf the label of a data key, when the pipeline has a `label` option.
   */
  constructor(
    onEvent: ((event: CacheEvent) => unknown) | undefined,
    namespace = "herdless",
    labelOf?: (key: string) => string | undefined,
  ) {
    this.#onEvent = onEvent;
    this.#namespace = namespace;
    this.#labelOf = labelOf;
  }

  /** True when someone listens to events (build them only then). */
  get listening(): boolean {
    return this.#onEvent !== undefined || eventChannel.hasSubscribers;
  }

  /**
   * Count a served read (`near-hit` first when from the near tier, then
   * `stale` or `hit`), the same events as two {@linkcode mark} calls: the
   * counters are named here, since a store through a computed name was a
   * tenth of a near hit's CPU.
   */
  served(key: string, stale: boolean, near: boolean): void {
    const stats = this.#stats;
    if (near) stats.nearHits++;
    if (stale) stats.stale++;
    else stats.hits++;
    if (this.#onEvent === undefined && !eventChannel.hasSubscribers) return;
    if (near) this.#deliver({ type: "near-hit", key });
    this.#deliver({ type: stale ? "stale" : "hit", key });
  }

  /** Count a key event; the object is built only for `onEvent` or a channel subscriber. */
  mark(type: KeyEvent, key: string): void {
    this.#stats[COUNTER[type]!]++;
    if (this.#onEvent !== undefined || eventChannel.hasSubscribers) this.#deliver({ type, key } as CacheEvent);
  }

  /** Count `event` and pass it to `onEvent`; a throwing hook never breaks a `get`. */
  emit(event: CacheEvent): void {
    const counter = event.type === "load-end"
      ? ("error" in event ? "loadErrors" : undefined)
      : event.type === "near-invalidation"
      ? undefined
      : COUNTER[event.type];
    if (counter !== undefined) this.#stats[counter]++;
    if (event.type === "near-invalidation") this.#stats.nearInvalidations += event.count;
    if (this.#onEvent !== undefined || eventChannel.hasSubscribers) this.#deliver(event);
  }

  #deliver(event: CacheEvent): void {
    if (this.#labelOf !== undefined && "key" in event && event.key !== undefined) {
      const label = this.#labelOf(event.key);
      if (label !== undefined) event = { ...event, label };
    }
    // A subscriber's throw does not reach us: diagnostics_channel reports it
    // as an uncaught exception on its own tick, as it does for every channel.
    if (eventChannel.hasSubscribers) eventChannel.publish({ ...event, namespace: this.#namespace });
    if (this.#onEvent === undefined) return;
    try {
      const result = this.#onEvent!(event);
      // An async hook's rejection would otherwise surface as an unhandled rejection.
      if (result instanceof Promise) result.catch(() => this.#stats.eventErrors++);
    } catch {
      // Metrics must not break reads; the failure is still counted.
      this.#stats.eventErrors++;
    }
  }

  /** Count a user hook that threw (`onEvent`, `label`): reported in `eventErrors`, otherwise ignored. */
  hookFailed(): void {
    this.#stats.eventErrors++;
  }

  /** A copy of the counters, with `nearEntries` as given. */
  snapshot(nearEntries: number, invalidationMode = 0): CacheStats {
    return { ...this.#stats, nearEntries, invalidationMode };
  }
}
