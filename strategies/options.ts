/**
 * The options of `pipeline()` and of each call of a cache, every default
 * written where the option is declared.
 *
 * @module
 */
import type { RedisLike } from "../resp/types.ts";
import type { CodecOption } from "./codec/mod.ts";
import type { CacheEvent } from "./events.ts";
import type { StandardSchemaV1 } from "./schema.ts";
import type { Identity, WakeupSource } from "./types.ts";

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
  /**
   * What a get does while Redis cannot be reached (a lost connection, a
   * command of the cache that ran out of `commandTimeoutMs`, a client that
   * says it is not connected). `"error"`: it fails, in bounded time, and the
   * origin is never called for it. `"local"`: it is served from this
   * process: a `near()` entry (stale-only, within its windows: `ifErrorMs`
   * decides how stale), a value this process loaded and could not store, or
   * one load per identity in this process (shared through `coalesce()`,
   * which "local" needs, and bounded by `limit()`), returned and not stored;
   * each is counted in `degraded`. Gets stop waiting for a dead Redis after
   * its first failure, and read it again once the client reconnects or a
   * probe read succeeds (one get per `probeMs`).
   * @default {"error"}
   */
  onRedisDown?: "error" | "local";
  /**
   * With `onRedisDown: "local"`, how long after Redis failed (or a probe
   * failed) one get reads it again to see whether it is back, in ms.
   * @default {1000}
   */
  probeMs?: number;
  /**
   * A Standard Schema (zod, valibot, arktype...) for the values: a loaded
   * value (or one given to `set()`) is validated before it is stored, and
   * refused with a `SchemaError` naming the path (nothing is stored); a
   * value read from Redis is validated once, when it is decoded, never on a
   * near hit: one the schema refuses is a miss (event `invalid`), reloaded.
   * Redis stores the loader's value (the schema's input); callers get the
   * schema's output. Asynchronous schemas are awaited. Unset: values are
   * not validated, and nothing is paid for it.
   * @default {undefined}
   */
  schema?: StandardSchemaV1<unknown, T>;
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
  /**
   * Load from the origin whatever is stored: no near or stored entry is
   * served. The load is shared with the other `forceFresh` calls of the
   * identity (coalesce()), runs under the lease (lease()) without looking
   * for a value published meanwhile, and what it publishes is what the next
   * get reads. Waiting on another process' lease, the call takes only a
   * value whose load began after it was made. @default {false}
   */
  forceFresh?: boolean;
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

/** Options of {@linkcode Cache.close}. */
export interface CloseOptions {
  /**
   * The longest `close()` waits for the calls running and the work they
   * started, in ms. When it runs out, every call still waiting rejects with
   * `ClosedError`, the loaders' signals fire, held leases are released, and
   * `close()` resolves without waiting for a loader that ignores its signal.
   * Unset: `close()` waits for all of it, however long.
   */
  timeoutMs?: number;
}
