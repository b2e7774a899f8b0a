/**
 * The strategy contract: what `pipeline()` and a strategy exchange. A
 * strategy author reads this file (entry `herdless/strategy`); a user of the
 * cache needs none of it. {@linkcode Strategy} declares each hook's contract
 * where the hook is declared.
 *
 * @module
 */
import type { Arg, RedisLike, Reply } from "../resp/types.ts";
import type { CacheEvent } from "./events.ts";
import type { Identity, Keys } from "./types.ts";

/**
 * A policy taking part in one or more phases of a `get`. Strategies are
 * plain objects returned by factories; one object joins one cache (it may
 * keep per-cache state). Every hook is optional, and each hook's contract is
 * written where it is declared below.
 *
 * Strategies compose by what they do, not by the order given to
 * `pipeline()`: read hooks judge an entry, fill hooks wrap the fill chain at
 * their {@linkcode FillStage} (outermost first: `caller`, `process`,
 * `redis`, `owner`), load hooks wrap each origin call, write hooks shape
 * what is published. Only hooks of the same kind and stage keep the order
 * given. The built-in strategies, in the order this reads best:
 * `near()` (a local tier, declared when attaching), `swr()` and `xfetch()`
 * (read and write hooks), `coalesce()` (fill, `process`), `lease()` (fill,
 * `redis`), `limit()` (load), `jitter()` (write). A custom fill hook sits at
 * `caller` unless its strategy names another `stage`.
 *
 * @example A fill strategy that times each fill
 * ```ts
 * import { connect, pipeline } from "@herdless/herdless";
 * import type { Strategy } from "@herdless/herdless/strategy";
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
  /** Names the strategy in errors and stack traces; two strategies of one pipeline never share a name. */
  readonly name: string;
  /**
   * Never set. A function has a `call` method, so this keeps a factory passed
   * uncalled (`lease` for `lease()`) from type-checking as a strategy.
   */
  readonly call?: never;
  /** Where this strategy's `fill` hook sits in the chain. @default {"caller"} */
  readonly stage?: FillStage;
  /**
   * Join a cache: runs once, when `pipeline()` builds it, before any call.
   * Validate settings against the cache (its TTL), keep the context, and
   * declare what the strategy needs of the cache (a local tier, a bound on
   * background refreshes, a fallback timer): those declarations are only
   * accepted here.
   *
   * @param cache the services of the cache this strategy joins.
   * @throws {RangeError} when a setting does not fit this cache.
   */
  attach?(cache: CacheContext): void;
  /**
   * Validate a TTL: the pipeline's own when it is built, each call's `ttlMs`
   * option, and each `setTtlMs()` of a loader.
   *
   * @param ttlMs the fresh window the call or cache would publish with, in ms.
   * @throws {RangeError} when this strategy cannot work with that TTL (a jitter spread not below it).
   */
  checkTtl?(ttlMs: number): void;
  /**
   * Judge the entry a read found (read phase). Read hooks run in the order
   * given, each receiving the previous verdict; the first one sees `hit`
   * for a fresh entry and `miss` otherwise. Called on every hit: keep it
   * synchronous and cheap, and return the same object when nothing changes.
   *
   * @param verdict the verdict so far.
   * @param entry the decoded entry, or `undefined` when the key is absent or unreadable.
   * @returns the verdict to pass on.
   */
  read?(verdict: Verdict, entry: Entry | undefined): Verdict;
  /**
   * Wrap the next fill step like middleware (fill phase), at this
   * strategy's `stage`. The returned function must call `next` at most once
   * per request, with a copy of it (`{ ...req }`): a second call, or a
   * request built from scratch, rejects instead of loading twice. A fill
   * that waits on work it does not drive calls `req.waiting()` first.
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
   * A hit calls it only while this cache runs a fill (no load can be held otherwise).
   */
  superseded?(key?: string): void;
  /**
   * Wrap each origin call (a loader, or one `loadMany` for several
   * identities), in the order given: `limit()` counts these. Only owners
   * reach it: a caller served by another's load never does.
   *
   * @param next the inner step (the next load hook, or the origin call).
   * @returns the load step this strategy adds.
   */
  load?(next: Load): Load;
  /**
   * Shape what is published (write phase), by changing `plan` in place.
   * Runs for loads and for `set()`, not for a "not found".
   *
   * @param plan the windows about to be stored with the value.
   */
  write?(plan: WritePlan): void;
  /**
   * Release what `attach` acquired; `cache.close()` awaits it.
   *
   * @returns a promise that settles once this strategy holds nothing.
   */
  close?(): Promise<void>;
}

/**
 * Where a fill hook sits in the fill chain, outermost first; hooks of one
 * stage keep the order given to `pipeline()`:
 * - `"caller"`: around everything a caller waits for, once per caller
 *   (a custom hook's default: timing, a fallback of its own);
 * - `"process"`: where the callers of this process share one fill (`coalesce()`);
 * - `"redis"`: where processes share one fill through Redis (`lease()`);
 * - `"owner"`: reached only by the caller that loads, just before the
 *   origin call and the publication.
 */
export type FillStage = "caller" | "process" | "redis" | "owner";

/**
 * What a cache offers the strategies that join it (`attach`): its settings,
 * its Redis connection, its events, its reads, and the declarations a
 * strategy makes while attaching.
 */
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
  /**
   * Declare an in-process tier that the read phase consults before Redis
   * (`near()`). The cache keeps it coherent with Redis, from client tracking
   * or from invalidation messages, and remembers the keys of at least
   * `tier.maxEntries` identities. Only while attaching; at most one per cache.
   *
   * @param tier the tier; the cache decides what enters it and judges what comes out.
   * @throws {TypeError} for a second tier, outside `attach`, or on a client that cannot hear invalidations (an adapter).
   */
  addLocalTier(tier: LocalTier): void;
  /**
   * Declare that this cache runs at most `max` background refreshes (stale
   * and early refreshes) at once; the smallest bound declared wins, 16 when
   * none is. Only while attaching.
   *
   * @param max a positive integer.
   * @throws {TypeError} outside `attach`.
   */
  limitRefreshes(max: number): void;
  /**
   * Declare that a caller whose miss has a fallback (a read verdict's
   * stale-if-error entry) gets that fallback once it has waited `ms` for the
   * fill, which goes on in the background and publishes (swr's
   * `softTimeoutMs`). Only while attaching; the smallest declared wins.
   *
   * @param ms a positive integer.
   * @throws {TypeError} outside `attach`.
   */
  fallbackAfter(ms: number): void;
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
  /** Size of the stored envelope in bytes (UTF-16 code units for text), its payload counted inflated when compressed. */
  readonly size: number;
  /** The loader's validator stored with the value (`setEtag`), for a conditional refresh. */
  readonly etag?: string | undefined;
}

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
  /**
   * Redis cannot be reached (`onRedisDown: "local"`): this fill serves this
   * process only. A strategy that coordinates through Redis (`lease()`)
   * passes it on untouched; the value is not published, and is kept in this
   * process for its windows.
   */
  readonly offline?: boolean;
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
  /** For a load Redis did not store because it refused the write or could not be reached. */
  readonly degraded?: "redis-down" | "write-refused";
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
  /** The most entries it holds: the cache remembers the keys of at least as many identities. */
  readonly maxEntries: number;
}

/** The result of one read round trip. */
export interface ReadResult {
  /** The reply of the extra command sent in the same round trip, if any. */
  readonly extra: Reply | undefined;
  /** The decoded entry, or `undefined` when absent, expired or undecodable. */
  readonly entry: Entry | undefined;
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
