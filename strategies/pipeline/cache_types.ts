/**
 * Types only: the public shapes of a cache built by `pipeline()`, its
 * options, the options of each call, and the {@linkcode Cache} interface
 * itself. The cache is `pipeline.ts`; this file holds no code.
 *
 * @module
 */
import type { RedisLike } from "../../resp/types.ts";
import type { CodecOption } from "../codec.ts";
import type { CacheEvent, CacheStats, Identity, InvalidationMode, Keys, Loader, WakeupSource } from "../types.ts";
import type { BatchLoaderContext } from "./loader_context.ts";
import type { CacheResult } from "./result.ts";

/** Options of `pipeline()`. */
export interface PipelineOptions<T> {
  /**
   * Our `RedisClient` or `ClusterClient` (with `resp: 3` the server tracks
   * what the cache reads: lease waiters are woken and clear/tag versions kept
   * in memory without a round trip per hit; `near()` works on either
   * protocol, on invalidation messages where tracking is not available), or
   * any `{ send }` adapter (`fromIoredis`, `fromNodeRedis`, `fromBunRedis`).
   */
  redis: RedisLike;
  /** How long a published value stays fresh, in ms (a call may pass its own `ttlMs`). */
  ttlMs: number;
  /** Prefix of every key; must not contain `{` or `}` (the hash tag follows it). @default {"herdless"} */
  namespace?: string;
  /** How long a "not found" (a loader returning `undefined`) is cached, in ms; 0 caches nothing. @default {0} */
  negativeTtlMs?: number;
  /** How values are stored: `"json"`, `"string"`, `"bytes"` (binary safe) or `{ encode, decode }`. @default {"json"} */
  codec?: CodecOption<T>;
  /** Timeout of each Redis command the cache sends when the caller's own deadline is not sooner, in ms. @default {1000} */
  commandTimeoutMs?: number;
  /**
   * How lease waiters learn of publications. `"auto"`: through the server's
   * client tracking on `redis` when it is one of our RESP3 clients (no
   * pub/sub on the command connection, so Redis never applies its pub/sub
   * output limits to it), else by polling. `"poll"`: never pushed. Or a
   * RESP3 client to subscribe on (for adapters; give it a connection of its
   * own: a subscribed connection falls under `client-output-buffer-limit
   * pubsub`).
   * @default {"auto"}
   */
  wakeups?: WakeupSource;
  /**
   * The largest encoded value cached, in bytes; a larger one is a
   * `RangeError` naming this setting and nothing is cached (Redis itself
   * refuses strings over `proto-max-bulk-len`, 512 MiB by default).
   * @default {536870912}
   */
  maxValueBytes?: number;
  /**
   * When Redis refuses writes (`OOM` under `maxmemory`, `READONLY` on a
   * replica), serve the origin's value uncached (counted in `degraded`,
   * event `degraded`) instead of failing the call. Reads still fail closed:
   * an unreachable Redis is an error, never an unguarded origin call. The
   * value served uncached stays in this process' memory and stands in for
   * any older entry it reads while that value lasts, so this process never
   * serves an older value after it; other processes do not see it (set
   * `false` for that order across processes).
   * @default {true}
   */
  failOpen?: boolean;
  /** A millisecond clock, used only to measure durations and to age entries against the server clock estimate; never compared across machines. @default {() => performance.now()} */
  now?: () => number;
  /** A random source in [0, 1) (jitter, xfetch, poll spacing, version tokens). @default {Math.random} */
  random?: () => number;
  /** Receives every event (hit, miss, load-end with its duration...); a throwing hook is counted in `eventErrors` and ignored. */
  onEvent?: (event: CacheEvent) => void;
  /**
   * Hands over the work the cache goes on with after a call returned: a
   * stale-while-revalidate refresh, a load whose callers left (its publish
   * and lease release), and `close()`. A Cloudflare Worker passes
   * `ctx.waitUntil.bind(ctx)` so its isolate lives until that work ends;
   * the promises given never reject. Undefined: the process keeps running
   * anyway (Node, Deno, Bun).
   */
  waitUntil?: (work: Promise<unknown>) => void;
  /**
   * Names an identity in events (`label`) and in `herdless:get` traces
   * (`identity`), e.g. `(id) => String(id[0])` for "user" without the user's
   * id. Without it, events and traces carry only the hashed data key, so
   * nothing personal in an identity reaches logs by accident. Called only
   * while someone listens (an `onEvent`, a channel subscriber) or when a
   * codec refuses a value; keep it cheap, and return something safe to log.
   * A label that throws is counted in `eventErrors` and the key stands in.
   */
  label?: (identity: Identity) => string;
}

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

/** Options of one {@linkcode Cache.get} call. */
export interface GetOptions {
  /** Abort this call (it rejects with `signal.reason`); a load it started still publishes for others. */
  signal?: AbortSignal;
  /** Reject with `TimeoutError` after this many ms; waits and Redis commands end with it. */
  timeoutMs?: number;
  /** The fresh window if this call publishes, instead of the pipeline's `ttlMs`. */
  ttlMs?: number;
  /** Tags of the value this call publishes: `invalidateTags()` of any of them makes it a miss. */
  tags?: readonly string[];
}

/** Options of {@linkcode Cache.set}. */
export interface SetOptions {
  /** The fresh window, instead of the pipeline's `ttlMs` (jitter and swr windows apply as to a load). */
  ttlMs?: number;
  /** Tags of the value. */
  tags?: readonly string[];
}

/** Options of {@linkcode Cache.warm}. */
export interface WarmOptions {
  /** Most identities being read or loaded at once. @default {4} */
  concurrency?: number;
  /** Stop starting loads; `warm` then waits for those running and rejects with `signal.reason`. */
  signal?: AbortSignal;
  /** Tags of the values loaded. */
  tags?: readonly string[];
}

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
  ctx: BatchLoaderContext,
) => Promise<readonly (T | undefined)[]>;

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
   * writes are seen at the entry's deadline) or `none`. A change is reported
   * by an `invalidation-mode` event.
   */
  invalidationMode(): InvalidationMode;
  /**
   * Refuse new calls, wait for the calls already running (one still reading
   * its entry then starts no load and no refresh: a miss rejects as closed, or
   * gets its stale-if-error value) and for the loads and background refreshes
   * they started, then release subscriptions and tracking. Nothing starts
   * after it resolves. The Redis connection stays open.
   */
  close(): Promise<void>;
}
