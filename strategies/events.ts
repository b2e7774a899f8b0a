/**
 * What a cache reports: its counters ({@linkcode CacheStats}) and its
 * events ({@linkcode CacheEvent}), delivered to `onEvent` and to the
 * `herdless:event` diagnostics channel.
 *
 * @module
 */
import type { StandardSchemaIssue } from "./schema.ts";
import type { InvalidationMode } from "./types.ts";

/** Counters returned by `cache.stats()`. */
export interface CacheStats {
  /** Fresh entries served. */
  hits: number;
  /** Reads that found nothing servable and went to the fill phase. */
  misses: number;
  /** Stale entries served (swr stale window, stale-if-error, or a shed call). */
  stale: number;
  /** Early refreshes xfetch started (a decision for a key already refreshing counts nothing; one over `maxRefreshes` counts in `refreshesDropped`). */
  earlyRefreshes: number;
  /** Origin loads started. */
  loads: number;
  /** Origin loads that failed (including values the codec could not encode). */
  loadErrors: number;
  /** Leases won. */
  leasesWon: number;
  /** Callers that waited for another owner. */
  waits: number;
  /** Publishes rejected because the lease had expired or been invalidated. */
  lateRejected: number;
  /** Callers that joined an in-process load. */
  coalesced: number;
  /** Calls refused by `limit()`. */
  shed: number;
  /** Waits and calls that ran out of time. */
  timeouts: number;
  /** Stored values that were not a valid envelope or did not decode. */
  decodeErrors: number;
  /** Background refreshes dropped because `maxRefreshes` were already running. */
  refreshesDropped: number;
  /** Background refreshes that failed (origin error, shed, Redis error); the entry keeps its deadline. */
  refreshErrors: number;
  /** Exceptions thrown by `onEvent` (ignored otherwise). */
  eventErrors: number;
  /** Entries served from the near tier without a round trip (also counted in `hits` or `stale`). */
  nearHits: number;
  /** Entries held in the near tier now. */
  nearEntries: number;
  /** Near entries dropped because Redis reported their key changed (or everything: a flush, a lost connection). */
  nearInvalidations: number;
  /**
   * Where this cache hears of changed keys now, a gauge (`invalidationMode()` in words): 0 nowhere (no near
   * tier and no tracking), 1 client tracking, 2 invalidation messages (tracking refused, or RESP2).
   */
  invalidationMode: number;
  /** `peek()` calls (not counted in hits or misses). */
  peeks: number;
  /** Values written by `set()`. */
  sets: number;
  /**
   * Gets served without Redis storing the value: the origin's value when Redis refused writes (OOM, READONLY), and
   * every get `onRedisDown: "local"` served from this process while Redis was down.
   */
  degraded: number;
  /** Loaded values not stored because the loader called `skip()`. */
  skips: number;
  /** Callers in the error window served the old value after swr's `softTimeoutMs` while their load went on (also in `stale`). */
  softTimeouts: number;
  /** Loads that answered `ctx.notModified()`: the previous value republished with a fresh window (counted once the republication settled). */
  notModified: number;
  /** Values read from Redis that the pipeline's `schema` refused (each a miss, reloaded). */
  invalid: number;
}

/**
 * An observable event, emitted to `onEvent` and published on the
 * `herdless:event` diagnostics channel (with the cache's `namespace` added).
 * `key` is the data key (never the identity, which may be sensitive); an
 * event about a key carries `label` too when the pipeline has a `label`
 * option that named its identity.
 *
 * @example Wire load durations into your metrics
 * ```ts
 * import { type CacheEvent, connect, pipeline } from "@herdless/herdless";
 * const durations: number[] = [];
 * const onEvent = (event: CacheEvent) => {
 *   if (event.type === "load-end" && !("error" in event)) durations.push(event.durationMs);
 * };
 * const redis = await connect(process.env.REDIS_URL);
 * const cache = pipeline({ redis, ttlMs: 1000, onEvent });
 * await cache.invalidate("event-example");
 * await cache.get("event-example", () => "v");
 * console.log(durations.length); // 1
 * await cache.close();
 * await redis.close();
 * ```
 */
export type CacheEvent = CacheEventBody & {
  /** The caller's name for the identity (the pipeline's `label` option); absent without one. */
  readonly label?: string;
};

/** What the `herdless:event` diagnostics channel publishes: a {@linkcode CacheEvent} and the namespace of its cache. */
export type CacheEventMessage = CacheEvent & {
  /** The namespace of the cache that emitted the event. */
  readonly namespace: string;
};

/** The events, one shape per type (see {@linkcode CacheEvent}). */
export type CacheEventBody =
  | { readonly type: "hit" | "miss" | "stale" | "early-refresh"; readonly key: string }
  | { readonly type: "load-start"; readonly key: string; readonly background: boolean }
  | { readonly type: "load-end"; readonly key: string; readonly durationMs: number; readonly error?: unknown }
  | { readonly type: "lease-won" | "lease-lost" | "wait"; readonly key: string }
  | { readonly type: "late-publish"; readonly key: string; readonly reason: string; readonly first: boolean }
  | { readonly type: "coalesced" | "shed" | "refresh-dropped"; readonly key: string }
  | { readonly type: "timeout"; readonly key: string; readonly waitedMs: number }
  | { readonly type: "decode-error" | "refresh-error"; readonly key: string; readonly error: unknown }
  | { readonly type: "near-hit" | "peek" | "set" | "skip" | "soft-timeout" | "not-modified"; readonly key: string }
  | { readonly type: "invalid"; readonly key: string; readonly issues: readonly StandardSchemaIssue[] }
  | { readonly type: "near-invalidation"; readonly key: string | undefined; readonly count: number }
  | { readonly type: "degraded"; readonly key: string; readonly error: unknown }
  | { readonly type: "clear"; readonly epoch: string }
  | { readonly type: "invalidate-tags"; readonly tags: readonly string[] }
  | { readonly type: "invalidation-mode"; readonly mode: InvalidationMode; readonly reason: string }
  | { readonly type: "redis-down"; readonly error: unknown }
  | { readonly type: "redis-up"; readonly downMs: number };
