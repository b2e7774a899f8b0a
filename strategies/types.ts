/**
 * The shapes shared by the pipeline and every strategy: what a read produces
 * (an {@linkcode Entry} judged by a {@linkcode Verdict}), what a fill
 * receives and returns ({@linkcode FillRequest}, {@linkcode Outcome}), what a
 * write shapes ({@linkcode WritePlan}), and the per-cache services a strategy
 * is given when it joins a pipeline ({@linkcode CacheContext}).
 *
 * Strategies import this file and nothing above it, so the dependency graph
 * stays a tree: pipeline -> strategies -> types -> resp.
 *
 * Past the ~350 lines a file should keep to, on purpose: it holds types
 * only, most of its lines are their JSDoc, and it is the one contract a
 * strategy author reads; split, the hooks and the shapes they exchange
 * would be read in several files.
 *
 * @module
 */
import type { Arg, RedisLike, Reply } from "../resp/types.ts";

/**
 * What a cached value is about. A string, or a tuple of the inputs that change
 * the value (tenant, scope, locale, version...); both are hashed into keys.
 */
export type Identity = string | readonly (string | number)[];

/** What a loader receives. */
export interface LoaderContext {
  /**
   * Fires when no caller in this process waits for the load any more (every
   * coalesced caller gave up). A loader may stop then, or finish anyway so
   * that waiters in other processes get the value.
   */
  readonly signal: AbortSignal;
  /** The identity passed to `get`. */
  readonly identity: Identity;
  /**
   * This value's fresh window, replacing the call's and the pipeline's
   * `ttlMs` (jitter and swr windows apply to it; a not-found keeps
   * `negativeTtlMs`). The last call wins.
   *
   * @throws {RangeError} when `ms` is not a positive integer (or a strategy refuses it, as for a call's `ttlMs`).
   * @throws {TypeError} once the loader settled.
   */
  setTtlMs(ms: number): void;
  /**
   * This value's tags, replacing those of the call. Invalidations are caught
   * from the moment it is called: an `invalidateTags` racing the load before
   * that is caught only for tags given to `get()`.
   *
   * @throws {TypeError} for tags that are not non-empty strings, or once the loader settled.
   */
  setTags(tags: readonly string[]): void;
  /**
   * Do not store this value: it goes to every caller sharing this load in
   * this process, an entry already stored keeps its deadline, and the lease
   * is released at once, so waiters in other processes load for themselves.
   *
   * @throws {TypeError} once the loader settled.
   */
  skip(): void;
}

/**
 * Calls the origin. Returning `undefined` means "not found" (cached for
 * `negativeTtlMs` when that is positive).
 */
export type Loader<T> = (ctx: LoaderContext) => T | Promise<T>;

/** The Redis keys of one identity; both share one hash tag (one cluster slot). */
export interface Keys {
  /** Holds the envelope: `<namespace>:{<digest>}:data`. */
  readonly data: string;
  /** Holds the lease token while a caller loads: `<namespace>:{<digest>}:lease`. */
  readonly lease: string;
}

/**
 * A stored entry as decoded, before it is judged: what its envelope says
 * (windows as durations from `publishedAt`, the server's own time of
 * publication) and the decoded value. The near tier keeps these.
 */
export interface StoredEntry {
  /** The decoded value; `undefined` for a negative entry. */
  readonly value: unknown;
  /** True when the origin said "not found". */
  readonly negative: boolean;
  /** When it was published, on the clock of the server that holds it, in ms since the epoch. */
  readonly publishedAt: number;
  /** The fresh window stored at publish time, in ms. */
  readonly freshMs: number;
  /** The stale window stored at publish time (served stale, refreshed in the background). */
  readonly staleMs: number;
  /** The error window stored at publish time (served only when a reload fails). */
  readonly ifErrorMs: number;
  /** How long the load that produced this entry took, in ms: from the origin call to the write on the server. */
  readonly loadMs: number;
  /** Unique per publication: a re-read with another `id` is a newer value. */
  readonly id: string;
  /** The namespace epoch it was written under (`clear()` moves the epoch on). */
  readonly epoch: string;
  /** The tags it was published with, and the version each had when its load started. */
  readonly tags: readonly string[];
  /** Same index as `tags`. */
  readonly tagVersions: readonly string[];
  /** Size of the stored envelope in bytes (UTF-16 code units for text). */
  readonly size: number;
}

/**
 * A cache entry judged at the moment of a read: where it stands in its life.
 * The remaining times come from the server's own publication time and the
 * windows stored with it, compared with this client's estimate of that
 * server's clock; never from the local wall clock.
 */
export interface Entry {
  /** The decoded value; `undefined` for a negative entry. */
  readonly value: unknown;
  /** True when the origin said "not found". */
  readonly negative: boolean;
  /** Remaining physical lifetime in ms (fresh, then stale, then error window), from `publishedAt` and the estimate of the server's clock: no PTTL is read. */
  readonly pttl: number;
  /** Remaining fresh time in ms: `pttl - staleMs - ifErrorMs`; zero or less once expired. */
  readonly freshMs: number;
  /** Time since its publication, in the server's time (ms); absent where unknown. */
  readonly ageMs?: number;
  /** The stale window stored at publish time (served stale, refreshed in the background). */
  readonly staleMs: number;
  /** The error window stored at publish time (served only when a reload fails). */
  readonly ifErrorMs: number;
  /** How long the load that produced this entry took, in ms: from the origin call to the write on the server. */
  readonly loadMs: number;
  /** Unique per publication: a re-read with another `id` is a newer value. */
  readonly id: string;
  /** The tags it was published with. */
  readonly tags: readonly string[];
}

/**
 * A read strategy's judgement of an entry:
 * - `hit`: serve it;
 * - `refresh`: serve it and refresh early in the background (xfetch);
 * - `stale`: serve it stale and refresh in the background (swr);
 * - `miss`: load; `fallback` is served if the load fails (stale-if-error).
 */
export type Verdict =
  | { readonly kind: "hit" }
  | { readonly kind: "refresh" }
  | { readonly kind: "stale" }
  | { readonly kind: "miss"; readonly fallback?: Entry };

/** What a fill step is asked to do. Strategies pass a copy (`{ ...req, x }`) downstream. */
export interface FillRequest {
  /** The data and lease keys of the identity being filled. */
  readonly keys: Keys;
  /** The identity the caller passed to `get` (handed to the loader). */
  readonly identity: Identity;
  /** The TTL (fresh window) this call publishes with. */
  readonly ttlMs: number;
  /**
   * Fires when nobody in this process waits for the result any more. Waiting
   * and reading obey it; loading, publishing and releasing do not (an owner
   * whose caller left still publishes for the others).
   */
  readonly signal: AbortSignal;
  /** True for a background refresh: it never waits for another owner. */
  readonly background: boolean;
  /** The tags the value is published with (`get(..., { tags })`). */
  readonly tags: readonly string[];
  /**
   * Call just before this request waits on work it does not drive (another
   * caller's in-process load, another owner's lease). A `getMany` batch then
   * calls its loader for the identities that are ready instead of waiting
   * for this one; a strategy that waits without calling it only delays the batch.
   */
  readonly waiting?: () => void;
  /**
   * Set by a strategy that already counted this request as `degraded`
   * (Redis refused its write): the publication failing the same way is not counted again.
   */
  readonly degraded?: boolean;
  /** The entry the read phase saw, if any; a re-read must be newer to replace a load. */
  readonly seen: Entry | undefined;
  /**
   * A condition the publication must meet, checked in the same atomic step
   * as the write: the hook through which a fill strategy (`lease()`) keeps
   * an owner whose claim lapsed from overwriting a newer value.
   */
  readonly guard?: PublishGuard;
}

/**
 * Publish only while `key` holds `token`, and drop `key` with the
 * publication. A rejected publication returns the value stored now instead.
 * `key` must share the data key's hash tag (one cluster slot).
 */
export interface PublishGuard {
  /** The key whose value must still be `token` (the lease key). */
  readonly key: string;
  /** The value this call put there. */
  readonly token: string;
  /**
   * Keep the guard for at least `ms` more (a large value takes a while to
   * reach the server); resolves `false` when it is already lost.
   */
  readonly extend?: (ms: number) => Promise<boolean>;
  /** When the guard lapses unless extended, on the cache's clock (`now`), if known. */
  readonly expiresAt?: number;
  /** The guard's usual lifetime in ms (the lease's `leaseMs`), if it has one. */
  readonly leaseMs?: number;
}

/** How a fill ended. */
export interface Outcome {
  /** `origin`: this call loaded it; `cache`: another owner's value was read; `skipped`: a background refresh found another refresher. */
  readonly from: "origin" | "cache" | "skipped";
  /** The value to return (`undefined` for not found, or when skipped). */
  readonly value: unknown;
  /** True when this call's value was stored in Redis (and the lease dropped with it). */
  readonly published: boolean;
  /** For `from: "cache"`: the entry read (its age and fresh time), when known. */
  readonly entry?: Entry;
  /** For a published load: the fresh window it was stored with (after the write strategies). */
  readonly freshMs?: number;
}

/** One step of the fill chain: loads (or obtains) the value for a request. */
export type Fill = (req: FillRequest) => Promise<Outcome>;

/** One call to the origin: a `get`'s loader (one key) or a `getMany`'s `loadMany` (several). */
export interface LoadRequest {
  /** The data keys of the identities this call loads, in order. */
  readonly keys: readonly string[];
  /** Fires when no caller waits for any of them any more. */
  readonly signal: AbortSignal;
  /** True for a background refresh. */
  readonly background: boolean;
}

/** One step around an origin call: resolves the loaded values, aligned with `req.keys`. */
export type Load = (req: LoadRequest) => Promise<readonly unknown[]>;

/**
 * An in-process tier in front of Redis (what `near()` offers). It only
 * stores: the pipeline decides what may enter (a read that no invalidation
 * overtook), judges what comes out, and removes what Redis invalidates.
 */
export interface LocalTier {
  /** The entry held for `key`, if any (a hit may refresh its place for eviction). */
  get(key: string): StoredEntry | undefined;
  /** Hold `entry` for `key` until `deadline` (on the local clock, ms), evicting others to stay in bounds. */
  set(key: string, entry: StoredEntry, deadline: number): void;
  /** Drop `key`; true when it was held. */
  delete(key: string): boolean;
  /** Drop everything. */
  clear(): void;
  /** Entries held now. */
  readonly size: number;
}

/** What the write phase publishes; write strategies adjust it in place. */
export interface WritePlan {
  /** True for a "not found" marker. */
  readonly negative: boolean;
  /** The fresh window in ms (the TTL, or `negativeTtlMs` for a negative entry). */
  freshMs: number;
  /** The stale window in ms added after the fresh one. */
  staleMs: number;
  /** The error window in ms added after the stale one. */
  ifErrorMs: number;
  /** The measured load duration in ms. */
  readonly loadMs: number;
}

/** The result of one read round trip. */
export interface ReadResult {
  /** The reply of the extra command sent in the same round trip, if any. */
  readonly extra: Reply | undefined;
  /** The decoded entry, or `undefined` when absent, expired or undecodable. */
  readonly entry: Entry | undefined;
}

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
  /** Gets served from the origin without caching because Redis refused writes (OOM, READONLY). */
  degraded: number;
  /** Loaded values not stored because the loader called `skip()`. */
  skips: number;
  /** Callers in the error window served the old value after swr's `softTimeoutMs` while their load went on (also in `stale`). */
  softTimeouts: number;
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
  | { readonly type: "near-hit" | "peek" | "set" | "skip" | "soft-timeout"; readonly key: string }
  | { readonly type: "near-invalidation"; readonly key: string | undefined; readonly count: number }
  | { readonly type: "degraded"; readonly key: string; readonly error: unknown }
  | { readonly type: "clear"; readonly epoch: string }
  | { readonly type: "invalidate-tags"; readonly tags: readonly string[] }
  | { readonly type: "invalidation-mode"; readonly mode: InvalidationMode; readonly reason: string };

/**
 * Where a cache hears of changed keys (for its near tier, its tag and epoch
 * versions, its lease waiters): `tracking`, Redis' client tracking (RESP3,
 * `CLIENT TRACKING` allowed), which sees every writer; `messages`, the
 * invalidation messages herdless writers publish on the namespace's channel
 * (tracking refused, or RESP2; a near tier only), which see herdless writers
 * only; `none`.
 */
export type InvalidationMode = "tracking" | "messages" | "none";

/** Services a cache offers the strategies that joined it. */
export interface CacheContext {
  /** The Redis connection the pipeline was given: strategies send their own commands (the lease's `SET NX`) here. */
  readonly redis: RedisLike;
  /** The pipeline's key prefix; every key a strategy writes must start with it. */
  readonly namespace: string;
  /** The channel publications and releases announce the data key on. */
  readonly channel: string;
  /** The pipeline's default TTL. */
  readonly ttlMs: number;
  /** Per-command timeout used when the caller gave no shorter one. */
  readonly commandTimeoutMs: number;
  /** The injected clock, in ms; use it for durations only, never as a deadline shared with other machines. */
  readonly now: () => number;
  /** The injected random source, in [0, 1) (jitter draws, poll spreading). */
  readonly random: () => number;
  /**
   * Where a waiter learns that a key was published or its lease dropped.
   * `ready()` resolves `true` when announcements arrive by push (a waiter
   * then polls rarely), `false` when it must poll; `watch(key)` registers
   * interest before the read that precedes a wait.
   */
  readonly wakeups: Wakeups;
  /** Record an event: bump its counter and call `onEvent`. */
  emit(event: CacheEvent): void;
  /**
   * Read the entry (the near tier first when there is one and no `extra`;
   * else one round trip), sending `extra` first in the same write when given
   * (e.g. the lease's `SET NX`).
   */
  read(keys: Keys, signal: AbortSignal | undefined, extra?: readonly Arg[]): Promise<ReadResult>;
  /** Whether a re-read entry may stand in for a load (fresh, and newer than `seen`). */
  accepts(entry: Entry | undefined, seen: Entry | undefined): entry is Entry;
  /**
   * Whether `error` is Redis refusing writes (OOM, READONLY) and the cache
   * fails open (`failOpen`): then it is counted as `degraded` and the caller
   * should go on without the write (a lease not taken, a value not stored).
   */
  degrade(key: string, error: unknown): boolean;
}

/** One waiter's interest in one key, from {@linkcode Wakeups.watch}. */
export interface Ticket {
  /** Forget earlier announcements: call just before reading the key. */
  arm(): void;
  /** Resolve when the key is announced (at once if it was since `arm`) or after `ms`; reject with `signal.reason` on abort. */
  wait(ms: number, signal: AbortSignal): Promise<void>;
  /** Stop receiving announcements. */
  close(): void;
}

/** A cache's announcements of publications, offered to strategies through {@linkcode CacheContext}. */
export interface Wakeups {
  /** Set up on first use; `true` when announcements arrive by push, `false` when waiters poll this time. */
  ready(): Promise<boolean>;
  /** Register interest in `key` now; announcements from here on wake the ticket. */
  watch(key: string): Ticket;
}

/** A client that can receive RESP3 push frames (our `RedisClient` with `resp: 3`). */
export interface PushCapable extends RedisLike {
  /**
   * Receive every RESP3 push frame (pub/sub messages) this connection gets.
   *
   * @param listener called with each push frame's elements, e.g. `["message", channel, payload]`.
   * @returns a function that removes the listener.
   */
  onPush(listener: (push: Reply[]) => void): () => void;
}

/** `auto`: subscribe on `redis` when it is a RESP3 client; `poll`: never subscribe; or a RESP3 client to subscribe on. */
export type WakeupSource = "auto" | "poll" | PushCapable;

/**
 * A policy taking part in one or more phases of `get`. Strategies are plain
 * objects returned by factories; one object joins one cache (it may keep
 * per-cache state). A fill hook passes the request on as a copy
 * (`next({ ...req })`) and calls `next` at most once per request. Hooks are optional:
 * - `attach` runs once when the pipeline is built (validate against its TTL, keep the context);
 * - `checkTtl` validates a per-call `ttlMs`;
 * - `read` turns the entry into a verdict (read phase);
 * - `fill` wraps the next fill step like middleware (fill phase; first strategy outermost);
 * - `superseded` hears that the loads running for a key must no longer be shared;
 * - `load` wraps each origin call (a loader, or one `loadMany` call);
 * - `local` offers an in-process tier the read phase consults first;
 * - `needsTracking` says the strategy cannot work without Redis' client tracking;
 * - `write` shapes what is published (write phase);
 * - `maxRefreshes` caps the background refreshes running at once per cache;
 * - `close` releases what `attach` acquired.
 *
 * @example A fill strategy that times each fill
 * ```ts
 * import { connect, pipeline, type Strategy } from "@herdless/herdless";
 * function timing(): Strategy {
 *   return {
 *     name: "timing",
 *     fill: (next) =>
 *       async function timed(req) {
 *         const started = performance.now();
 *         try {
 *           return await next({ ...req });
 *         } finally {
 *           console.log(req.keys.data, Math.round(performance.now() - started), "ms");
 *         }
 *       },
 *   };
 * }
 * const redis = await connect(process.env.REDIS_URL);
 * const cache = pipeline({ redis, ttlMs: 1000 }, timing());
 * await cache.invalidate("timed");
 * await cache.get("timed", () => "v");
 * await cache.close();
 * await redis.close();
 * ```
 */
export interface Strategy {
  /** Names the strategy in errors and stack traces. */
  readonly name: string;
  /**
   * Join a cache: runs once, when `pipeline()` builds it, before any call.
   * Validate settings against the cache (its TTL) and keep the context.
   *
   * @param cache the services of the cache this strategy joins.
   * @throws {RangeError} when a setting does not fit this cache.
   */
  attach?(cache: CacheContext): void;
  /**
   * Validate a TTL: the pipeline's own when it is built, and each call's `ttlMs` option.
   *
   * @param ttlMs the fresh window the call or cache would publish with, in ms.
   * @throws {RangeError} when this strategy cannot work with that TTL (a jitter spread not below it).
   */
  checkTtl?(ttlMs: number): void;
  /**
   * Judge the entry a read found (read phase). Read strategies run in the
   * order given, each receiving the previous verdict; the first one sees
   * `hit` for a fresh entry and `miss` otherwise.
   *
   * @param verdict the verdict so far.
   * @param entry the decoded entry, or `undefined` when the key is absent or unreadable.
   * @returns the verdict to pass on (the same object when nothing changes).
   */
  read?(verdict: Verdict, entry: Entry | undefined): Verdict;
  /**
   * Wrap the next fill step like middleware (fill phase); the first strategy
   * given to `pipeline()` is the outermost. The returned function must call
   * `next` at most once per request, with a copy of it (`{ ...req }`).
   *
   * @param next the inner fill step (the next strategy, or finally the origin load and publication).
   * @returns the fill step this strategy adds, best given a name for stack traces.
   */
  fill?(next: Fill): Fill;
  /**
   * A value of `key` newer than the loads already running for it was served
   * (a hit while they run) or the key was invalidated or set: calls from now
   * on must not share those loads (`coalesce()` lets its running flight
   * finish for the callers it has, and starts a new one for the next).
   * Without a key, every key's loads are superseded (`clear()`,
   * `invalidateTags()`: a load that began before them publishes a miss).
   */
  superseded?(key?: string): void;
  /** Wraps each origin call (a loader, or a `loadMany` as one call), innermost last: `limit()` counts these. */
  load?(next: Load): Load;
  /** An in-process tier consulted before Redis (`near()`); at most one per pipeline. */
  readonly local?: LocalTier;
  /** True when the strategy cannot work without Redis' client tracking (`near()`). */
  readonly needsTracking?: boolean;
  /**
   * Shape what is published (write phase), by changing `plan` in place.
   *
   * @param plan the windows about to be stored with the value.
   */
  write?(plan: WritePlan): void;
  /** The most background refreshes this strategy allows at once per cache (swr's `maxRefreshes`). */
  readonly maxRefreshes?: number;
  /** How long a caller in the error window waits for a load before it gets the old value (swr's `softTimeoutMs`). */
  readonly softTimeoutMs?: number | undefined;
  /**
   * Release what `attach` acquired; `cache.close()` awaits it.
   *
   * @returns a promise that settles once this strategy holds nothing.
   */
  close?(): Promise<void>;
}
