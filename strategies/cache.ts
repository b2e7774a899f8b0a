/**
 * The cache `pipeline()` returns: the {@linkcode Cache} interface, what
 * `warm` and the `herdless:get` traces report, and what a `getMany`'s loader
 * is. Types only; the cache itself is `pipeline/pipeline.ts`.
 *
 * @module
 */
import type { CacheStats } from "./events.ts";
import type { CloseOptions, GetOptions, SetOptions, WarmOptions } from "./options.ts";
import type { BatchLoaderContext, CacheResult, Identity, InvalidationMode, Keys, Loader } from "./types.ts";

/** What {@linkcode Cache.warm} did, counting unique identities. */
export interface WarmReport {
  /** Loaded by this call's own loader. */
  loaded: number;
  /** Already servable, or filled by another caller or process meanwhile. */
  fresh: number;
  /** Failed (the loader's error, a timeout, Redis); the others went on. */
  failed: number;
}

/**
 * Loads several identities in one origin call (a batch query): resolves
 * their values aligned with `missing` (`undefined` for "not found").
 */
export type LoadMany<T> = (
  missing: readonly Identity[],
  ctx: BatchLoaderContext<T>,
) => Promise<readonly (T | undefined)[]>;

/**
 * What a subscriber of the `herdless:get` TracingChannel receives for each
 * `cache.get()`: `start` and `end` around the call, `asyncEnd` when it
 * settles, with `result` (the value) or `error` set on this same object.
 *
 * @example Time every get of a cache
 * ```ts
 * import { tracingChannel } from "node:diagnostics_channel";
 * import { connect, type GetTraceContext, pipeline } from "@herdless/herdless";
 * const started = new WeakMap<object, number>();
 * const gets = tracingChannel<unknown, GetTraceContext>("herdless:get");
 * const handlers = {
 *   start: (c: GetTraceContext) => void started.set(c, performance.now()),
 *   asyncEnd: (c: GetTraceContext) => console.log(c.identity, c.result, performance.now() - started.get(c)! >= 0),
 *   end() {},
 *   asyncStart() {},
 *   error() {},
 * };
 * gets.subscribe(handlers);
 * const redis = await connect(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
 * const pages = pipeline<string>({ redis, ttlMs: 60_000, namespace: "trace-doc", label: (id) => `page ${String(id)}` });
 * await pages.get("home", () => "<h1>"); // logs: page home <h1> true
 * gets.unsubscribe(handlers);
 * await pages.close();
 * await redis.close();
 * ```
 */
export interface GetTraceContext {
  /** The cache's namespace. */
  readonly namespace: string;
  /** The data key (hashed identity). */
  readonly key: string;
  /** The pipeline's `label` for the identity, or the data key when it has none (no PII by default). */
  readonly identity: string;
  /** The value, once the get resolved. */
  result?: unknown;
  /** The error, once the get rejected. */
  error?: unknown;
}

/**
 * A cache built by `pipeline()`.
 *
 * @example A call with its own deadline, then an invalidation
 * ```ts
 * import { connect, lease, pipeline } from "@herdless/herdless";
 * const redis = await connect(process.env.REDIS_URL);
 * const prices = pipeline<number>({ redis, ttlMs: 30_000, namespace: "prices", negativeTtlMs: 5_000 }, lease());
 * await prices.invalidate(["sku", 7]);
 * const price = await prices.get(["sku", 7], async ({ signal }) => (signal.aborted ? 0 : 9.99), { timeoutMs: 500 });
 * console.log(price, prices.keys(["sku", 7]).data.startsWith("prices:{")); // 9.99 true
 * await prices.close();
 * await redis.close();
 * ```
 */
export interface Cache<T> {
  /**
   * The cached value of `identity`, loading it with `loader` when it is
   * missing (how depends on the strategies). Resolves `undefined` for a "not
   * found" (the loader returned `undefined`). Rejects with the Redis error when
   * Redis cannot be read (the origin is then never called), `TimeoutError`
   * when a wait or `timeoutMs` runs out, `OverloadedError` when `limit()`
   * sheds the call, the loader's error, or a `TypeError` when the codec
   * cannot encode the loaded value (nothing is cached then).
   */
  get(identity: Identity, loader: Loader<T>, options?: GetOptions): Promise<T>;
  /**
   * `get`, telling also where the value came from and how old it is (for
   * `Age` and `Cache-Status` headers: see `cacheStatus()`). Behaves as `get`
   * in every other way (the same path, counters, errors and strategies); a
   * caller that joined another caller's load in this process reports that
   * load, a lease waiter reports the value it read from Redis with its age.
   *
   * @example Age and Cache-Status of a response
   * ```ts
   * import { cacheStatus, connect, pipeline } from "@herdless/herdless";
   * const redis = await connect(process.env.REDIS_URL);
   * const cache = pipeline<string>({ redis, ttlMs: 60_500 });
   * await cache.invalidate("entry-example");
   * const { value, source, ageMs, stored } = await cache.getEntry("entry-example", () => "hi");
   * console.log(value, source, ageMs, stored); // hi origin 0 true
   * const hit = await cache.getEntry("entry-example", () => "hi");
   * console.log(hit.source, Math.floor(hit.ageMs / 1000), cacheStatus(hit)); // redis 0 herdless; hit; ttl=60
   * await cache.close();
   * await redis.close();
   * ```
   */
  getEntry(identity: Identity, loader: Loader<T>, options?: GetOptions): Promise<CacheResult<T>>;
  /**
   * Write `value` through, as a load would publish it (jitter and swr windows
   * apply). Under `lease()` a load already running for `identity` can no
   * longer publish over it, and its waiters are woken with this value.
   *
   * @throws {TypeError} for `undefined` (use `invalidate()` to drop a value).
   */
  set(identity: Identity, value: T, options?: SetOptions): Promise<void>;
  /**
   * The value if one is servable now (fresh, or within the stale window
   * `swr()` allows), else `undefined`. Never loads, takes a lease or starts a
   * refresh; counted in `peeks`. A value only within the stale-if-error
   * window is not servable: only a failed reload may serve it.
   */
  peek(identity: Identity): Promise<T | undefined>;
  /**
   * The values of several identities (aligned, `undefined` for "not found"):
   * one read round trip for all, then one `loadMany` call for every miss this
   * process may load (each identity still goes through the strategies, so
   * what another caller or process is loading is waited for, not loaded
   * again). Duplicates are read and loaded once.
   *
   * @throws {TypeError} when `loadMany` resolves an array of another length (nothing is cached from it).
   */
  getMany(identities: readonly Identity[], loadMany: LoadMany<T>, options?: GetOptions): Promise<(T | undefined)[]>;
  /** Drop the value and any lease together, so a load already running cannot publish its older snapshot (under `lease()`). */
  invalidate(identity: Identity): Promise<void>;
  /**
   * End the fresh window of `identity`'s entry now, in every process (near
   * tiers too), keeping it as a stale fallback: with `swr()` the next get is
   * served stale and refreshes once, and a load that fails may still serve
   * it within `ifErrorMs`. Its lease is dropped with it, as `invalidate()`
   * drops it, so a load already running cannot publish its older snapshot
   * as fresh. An entry without a stale or error window (no `swr()`) or a
   * not-found is deleted: the next get loads. A get that starts once it
   * resolved never sees the entry fresh, whatever this client's estimate of
   * the server's clock.
   *
   * @example Mark an entry stale after writing to the source
   * ```ts
   * import { connect, pipeline, swr } from "@herdless/herdless";
   * const redis = await connect(process.env.REDIS_URL);
   * const cache = pipeline<string>({ redis, ttlMs: 60_000, namespace: "expire-example" }, swr({ staleMs: 60_000 }));
   * await cache.set("profile", "old");
   * await cache.expire("profile"); // after writing the new profile to the database
   * const entry = await cache.getEntry("profile", () => "new");
   * console.log(entry.value, entry.stale); // old true (and one refresh runs in the background)
   * await cache.close();
   * await redis.close();
   * ```
   */
  expire(identity: Identity): Promise<void>;
  /** Make every entry carrying one of `tags` a miss: one command per tag, whatever the number of entries. */
  invalidateTags(tags: readonly string[]): Promise<void>;
  /** Make every entry of the namespace a miss: one command (no SCAN, no KEYS); works on a cluster. */
  clear(): Promise<void>;
  /**
   * Load what is missing or due among `identities`, at most `concurrency`
   * at once, through the strategies (several processes warming the same keys
   * load each about once). One failure does not stop the rest.
   */
  warm(identities: readonly Identity[], loader: Loader<T>, options?: WarmOptions): Promise<WarmReport>;
  /** The Redis keys of `identity`. */
  keys(identity: Identity): Keys;
  /** A copy of the counters. */
  stats(): CacheStats;
  /**
   * Where this cache hears of changed keys now: `tracking` (client tracking:
   * every writer is seen), `messages` (tracking refused or RESP2: the near
   * tier hears herdless writers' invalidation messages; other programs'
   * writes are seen at the entry's deadline) or `none`. An
   * `invalidation-mode` event says it once it comes on, and on each change.
   */
  invalidationMode(): InvalidationMode;
  /**
   * Refuse new calls (`ClosedError`), serve the calls already running (a
   * get that was reading still loads on a miss; none starts a background
   * refresh), wait for them and for the loads and refreshes they started,
   * then release subscriptions and tracking. Nothing starts after it
   * resolves. The Redis connection stays open. With `timeoutMs`, the wait is
   * bounded: what still runs then is ended (callers reject with
   * `ClosedError`, loaders' signals fire, held leases are released).
   *
   * @param options how long to wait at most.
   * @returns a promise that settles once the cache holds nothing.
   * @throws {RangeError} for a `timeoutMs` that is not a non-negative integer.
   * @example Stop within two seconds, whatever a loader does
   * ```ts
   * import { connect, pipeline } from "@herdless/herdless";
   * const redis = await connect(process.env.REDIS_URL);
   * const cache = pipeline({ redis, ttlMs: 1000, namespace: "close-example" });
   * let loading = () => {};
   * const loaderStarted = new Promise<void>((resolve) => (loading = resolve));
   * const stuck = cache.get("slow", () => {
   *   loading();
   *   return new Promise<string>(() => {}); // a loader that never settles
   * });
   * const ended = stuck.catch((e: Error) => e.name); // handled before close() rejects it
   * await loaderStarted;
   * await cache.close({ timeoutMs: 2_000 });
   * console.log(await ended); // "ClosedError"
   * await redis.close();
   * ```
   */
  close(options?: CloseOptions): Promise<void>;
}
