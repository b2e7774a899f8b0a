/**
 * The shapes a user of the cache meets besides the cache itself: what an
 * identity is, what a loader receives, what `getEntry` reports, where a
 * cache hears of changed keys. The cache and its options are in `cache.ts`
 * and `options.ts`, what it reports in `events.ts`; what a strategy author
 * needs is the contract, `contract.ts`.
 *
 * @module
 */
import type { RedisLike, Reply } from "../resp/types.ts";

/**
 * What a cached value is about. A string, or a tuple of the inputs that change
 * the value (tenant, scope, locale, version...); both are hashed into keys.
 */
export type Identity = string | readonly (string | number)[];

/** The Redis keys of one identity; both share one hash tag (one cluster slot). */
export interface Keys {
  /** Holds the envelope: `<namespace>:{<digest>}:data`. */
  readonly data: string;
  /** Holds the lease token while a caller loads: `<namespace>:{<digest>}:lease`. */
  readonly lease: string;
}

/**
 * The entry a load replaces, as `ctx.previous` shows it: enough for a
 * conditional request (`If-None-Match: etag`, `If-Modified-Since: publishedAt`).
 */
export interface PreviousValue<T = unknown> {
  /** The value callers were served (the schema's output, with a `schema`). */
  readonly value: T;
  /** The validator the loader stored with it (`setEtag`), if any. */
  readonly etag?: string;
  /** When it was published, on the clock of the Redis server that holds it, in ms since the epoch. */
  readonly publishedAt: number;
}

/** What a loader receives. */
export interface LoaderContext<T = unknown> {
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
  /**
   * The entry this load replaces, when one was read: stale, in swr's error
   * window, `expire()`d, or due for an early refresh; under `lease()` the
   * entry its lease read found (a `forceFresh` load's too). `undefined` for
   * a first load, a not-found, and a `forceFresh` load without `lease()`.
   */
  readonly previous: PreviousValue<T> | undefined;
  /**
   * Store `etag` with this value (the origin's `ETag`, or any validator the
   * loader sends back in a conditional request): the next load of the
   * identity sees it in `previous.etag`. The last call wins.
   *
   * @throws {TypeError} for anything but a non-empty string, or once the loader settled.
   * @throws {RangeError} for an etag over 256 characters.
   */
  setEtag(etag: string): void;
  /**
   * `return ctx.notModified()` when the origin says the previous value is
   * current (an HTTP 304): `previous.value` is published again with a fresh
   * window (and `previous.etag`, unless `setEtag` chose another) without
   * being encoded or sent to Redis again, and callers get it.
   *
   * @returns `previous.value`.
   * @throws {TypeError} when there is no previous value, or once the loader settled.
   */
  notModified(): T;
}

/**
 * Calls the origin. Returning `undefined` means "not found" (cached for
 * `negativeTtlMs` when that is positive).
 */
export type Loader<T> = (ctx: LoaderContext<T>) => T | Promise<T>;

/**
 * Where a cache hears of changed keys (for its near tier, its tag and epoch
 * versions, its lease waiters): `tracking`, Redis' client tracking (RESP3,
 * `CLIENT TRACKING` allowed), which sees every writer; `messages`, the
 * invalidation messages herdless writers publish on the namespace's channel
 * (tracking refused, or RESP2; a near tier only), which see herdless writers
 * only; `none`.
 */
export type InvalidationMode = "tracking" | "messages" | "none";

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

/** What `loadMany` receives: its signal, and per missing identity (by index into `missing`) the loader's choices. */
export interface BatchLoaderContext<T = unknown> {
  /** Fires when no caller waits for any identity of this call any more. */
  readonly signal: AbortSignal;
  /**
   * The fresh window of `missing[index]`'s value, replacing the call's and
   * the pipeline's `ttlMs` (jitter and swr windows apply to it).
   *
   * @throws {RangeError} when `index` or `ms` is out of range.
   * @throws {TypeError} once `loadMany` settled.
   */
  setTtlMs(index: number, ms: number): void;
  /**
   * The tags of `missing[index]`'s value, replacing the call's.
   *
   * @throws {TypeError} for tags that are not non-empty strings, or once `loadMany` settled.
   */
  setTags(index: number, tags: readonly string[]): void;
  /**
   * Do not store `missing[index]`'s value: it goes to the callers of this
   * process, and waiters elsewhere load it themselves.
   *
   * @throws {TypeError} once `loadMany` settled.
   */
  skip(index: number): void;
  /**
   * The entry `missing[index]`'s load replaces, when one was read (see
   * {@linkcode LoaderContext.previous}).
   *
   * @throws {RangeError} when `index` is out of range.
   */
  previous(index: number): PreviousValue<T> | undefined;
  /**
   * Store `etag` with `missing[index]`'s value (see {@linkcode LoaderContext.setEtag}).
   *
   * @throws {TypeError} for anything but a non-empty string, or once `loadMany` settled.
   * @throws {RangeError} when `index` is out of range, or for an etag over 256 characters.
   */
  setEtag(index: number, etag: string): void;
  /**
   * Put `ctx.notModified(index)` at `index` of the values returned: `missing[index]`'s
   * previous value is published again with a fresh window (see {@linkcode LoaderContext.notModified}).
   *
   * @returns the previous value.
   * @throws {TypeError} when there is none, or once `loadMany` settled.
   */
  notModified(index: number): T;
}

/** Where a caller's value came from, and how old it is. */
export interface CacheResult<T> {
  /** The value, as `get` would have returned it (`undefined` for a not-found). */
  readonly value: T;
  /**
   * Where this caller's value came from: the near tier, Redis (a hit, or
   * another process' load that a lease waiter read), or the origin (this
   * process' load, including one this caller joined).
   */
  readonly source: "near" | "redis" | "origin";
  /** Served past its fresh window (swr's stale window, stale-if-error, a soft timeout). */
  readonly stale: boolean;
  /** Time since the value was published, in the server's time (0 when it was loaded for this call). */
  readonly ageMs: number;
  /** Fresh window left in ms; zero or less when stale. */
  readonly freshForMs: number;
  /**
   * This call's load was written to Redis: false for a hit, for `skip()`, for
   * a not-found that is not cached, and for a publication refused or late.
   */
  readonly stored: boolean;
  /**
   * Served without Redis storing it: `"redis-down"` while Redis could not be
   * reached (`onRedisDown: "local"`), `"write-refused"` when Redis refused
   * the write of this call's load (OOM, READONLY, with `failOpen`); else `false`.
   */
  readonly degraded: false | "redis-down" | "write-refused";
  /** This call's load answered `ctx.notModified()`: the previous value, republished with a fresh window. */
  readonly notModified: boolean;
}
