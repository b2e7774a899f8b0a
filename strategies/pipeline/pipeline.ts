/**
 * `pipeline()`: strategies composed into a cache. A `get` reads the entry (one
 * round trip), lets the read strategies judge it, and on a miss runs the fill
 * chain (first strategy outermost) down to the origin load and its publication.
 *
 * @module
 */
import { NEVER, race } from "../../resp/_abort.ts";
import { func, nonNegativeInt, optionsObject, positiveInt } from "../../resp/_validate.ts";
import { isTimeoutError } from "../../resp/errors.ts";
import type { RedisLike } from "../../resp/types.ts";
import { type CodecOption, resolveCodec } from "../codec.ts";
import type {
  CacheContext,
  CacheEvent,
  CacheStats,
  Entry,
  Fill,
  FillRequest,
  Identity,
  Keys,
  Loader,
  Strategy,
  Verdict,
  WakeupSource,
} from "../types.ts";
import { Background } from "./background.ts";
import { compose, request } from "./chain.ts";
import { checkNamespace, keysFor } from "./keys.ts";
import { Publisher } from "./publish.ts";
import { accepts, Reader } from "./read.ts";
import { CallScope } from "./scope.ts";
import { Recorder } from "./stats.ts";
import { ChannelWakeups } from "./wakeups.ts";

/** Options of {@linkcode pipeline}. */
export interface PipelineOptions<T> {
  /** Our `RedisClient` (with `resp: 3`, waiters are woken by push), a cluster client, or any `{ send }` adapter. */
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
   * How lease waiters learn of publications: `"auto"` (RESP3 push when `redis`
   * supports it), `"poll"`, or a RESP3 client to subscribe on. A client that
   * turns out to speak RESP2 is never subscribed on (RESP2 pub/sub would turn
   * its connection into a subscriber that refuses commands): its waiters
   * poll. Subscribing waits at most `commandTimeoutMs` per command; if it
   * fails, waiters poll and it is tried again a second later at the earliest.
   * @default {"auto"}
   */
  wakeups?: WakeupSource;
  /** A millisecond clock, used only to measure durations (load time, waits); never compared across machines. @default {() => performance.now()} */
  now?: () => number;
  /** A random source in [0, 1) (jitter, xfetch, poll spacing). @default {Math.random} */
  random?: () => number;
  /** Receives every event (hit, miss, load-end with its duration...); a throwing hook is counted in `eventErrors` and ignored. */
  onEvent?: (event: CacheEvent) => void;
}

/** Options of one {@linkcode Cache.get} call. */
export interface GetOptions {
  /** Abort this call (it rejects with `signal.reason`); a load it started still publishes for others. */
  signal?: AbortSignal;
  /** Reject with `TimeoutError` after this many ms; waits and Redis commands end with it. */
  timeoutMs?: number;
  /** The fresh window if this call publishes, instead of the pipeline's `ttlMs`. */
  ttlMs?: number;
}

/**
 * A cache built by {@linkcode pipeline}.
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
  /** Drop the value and any lease together, so a load already running cannot publish its older snapshot (under `lease()`). */
  invalidate(identity: Identity): Promise<void>;
  /** The Redis keys of `identity`. */
  keys(identity: Identity): Keys;
  /** A copy of the counters. */
  stats(): CacheStats;
  /**
   * Refuse new calls, wait for the calls already running (one still reading
   * its entry then starts no load and no refresh: a miss rejects as closed, or
   * gets its stale-if-error value) and for the loads and background refreshes
   * they started, then release subscriptions. Nothing starts after it
   * resolves. The Redis connection stays open.
   */
  close(): Promise<void>;
}

const KEY_MEMO_SIZE = 10_000;
const MISS: Verdict = { kind: "miss" };
const closedError = () => new Error("Cannot get: the cache is closed");
const HIT: Verdict = { kind: "hit" };
const joined = new WeakSet<Strategy>();

/**
 * Compose strategies into a cache. The first strategy is the outermost fill
 * step: in `pipeline(o, coalesce(), lease(), limit())` a call joins an
 * in-process load first, then takes (or waits for) the Redis lease, then
 * queues for an origin slot. Read strategies (`xfetch`, `swr`) and write
 * strategies (`jitter`, `swr`) apply in the order given too.
 *
 * @param options the Redis connection, the TTL and the cache's settings.
 * @param strategies the policies, outermost first; each object joins one cache only.
 * @returns the cache.
 * @throws {RangeError | TypeError} naming the first bad setting, or a strategy reused across caches.
 * @example A cache that never stampedes
 * ```ts
 * import { coalesce, connect, jitter, lease, pipeline, swr, xfetch } from "@herdless/herdless";
 * const redis = await connect({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", resp: 3 });
 * const users = pipeline<{ name: string }>(
 *   { redis, ttlMs: 60_000, namespace: "users" },
 *   swr({ staleMs: 30_000 }), xfetch(), coalesce(), lease(), jitter({ spreadMs: 5_000 }),
 * );
 * await users.invalidate(["user", 42]);
 * const user = await users.get(["user", 42], ({ signal }) => ({ name: signal.aborted ? "?" : "Ada" }));
 * console.log(user.name, users.stats().loads); // "Ada" 1
 * await users.close();
 * await redis.close();
 * ```
 */
export function pipeline<T = unknown>(options: PipelineOptions<T>, ...strategies: Strategy[]): Cache<T> {
  return new PipelineCache<T>(options, strategies);
}

class PipelineCache<T> implements Cache<T> {
  readonly #redis: RedisLike;
  readonly #namespace: string;
  readonly #keyMemo = new Map<string, Keys>();
  readonly #ttlMs: number;
  readonly #commandTimeoutMs: number;
  readonly #channel: string;
  readonly #rec: Recorder;
  readonly #strategies: readonly Strategy[];
  readonly #readers: readonly Strategy[];
  readonly #chain: Fill;
  readonly #reader: Reader;
  readonly #wakeups: ChannelWakeups;
  readonly #background: Background;
  #closing: Promise<void> | undefined;
  /** Gets between their entry and their return; close() waits for them. */
  #active = 0;
  #idle: (() => void) | undefined;

  constructor(options: PipelineOptions<T>, strategies: Strategy[]) {
    const o = optionsObject<PipelineOptions<T>>("create pipeline", options);
    const redis = o.redis;
    if (redis === null || typeof redis !== "object" || typeof redis.send !== "function") {
      throw new TypeError("Cannot create pipeline: 'redis' must be an object with a send(command, options) function");
    }
    this.#redis = redis;
    this.#ttlMs = positiveInt("create pipeline", "ttlMs", o.ttlMs);
    this.#namespace = checkNamespace(o.namespace ?? "herdless");
    const negativeTtlMs = nonNegativeInt("create pipeline", "negativeTtlMs", o.negativeTtlMs ?? 0);
    this.#commandTimeoutMs = positiveInt("create pipeline", "commandTimeoutMs", o.commandTimeoutMs ?? 1000);
    const codec = resolveCodec(o.codec);
    const wakeups = o.wakeups ?? "auto";
    if (wakeups !== "auto" && wakeups !== "poll" && typeof (wakeups as { onPush?: unknown })?.onPush !== "function") {
      throw new TypeError(`Cannot create pipeline: 'wakeups' must be "auto", "poll" or a RESP3 client with onPush()`);
    }
    const now = func<() => number>("create pipeline", "now", o.now ?? (() => performance.now()));
    const random = func<() => number>("create pipeline", "random", o.random ?? Math.random);
    const onEvent = o.onEvent === undefined
      ? undefined
      : func<(e: CacheEvent) => void>("create pipeline", "onEvent", o.onEvent);
    this.#rec = new Recorder(onEvent);
    strategies.forEach((s, i) => {
      if (s === null || typeof s !== "object" || typeof s.name !== "string") {
        throw new TypeError(
          `Cannot create pipeline: strategy ${i + 1} must be an object returned by a strategy factory`,
        );
      }
      if (joined.has(s)) {
        throw new TypeError(
          `Cannot create pipeline: this ${s.name}() strategy already belongs to another cache; call ${s.name}() once per pipeline`,
        );
      }
    });
    this.#strategies = strategies;
    this.#readers = strategies.filter((s) => typeof s.read === "function");
    const cap = Math.min(...strategies.map((s) => s.maxRefreshes ?? Infinity));
    this.#background = new Background(cap === Infinity ? 16 : cap, (event) => this.#rec.emit(event));

    const channel = (this.#channel = `${this.#namespace}:published`);
    const emit = (event: CacheEvent) => this.#rec.emit(event);
    const commandTimeoutMs = this.#commandTimeoutMs;
    const reader = (this.#reader = new Reader({ redis, codec, commandTimeoutMs, emit }));
    this.#wakeups = new ChannelWakeups({ wakeups, redis, channel, commandTimeoutMs, now });
    const context: CacheContext = {
      redis,
      namespace: this.#namespace,
      channel,
      ttlMs: this.#ttlMs,
      commandTimeoutMs,
      now,
      random,
      wakeups: this.#wakeups,
      emit,
      read: (keys, signal, extra) => reader.read(keys, signal, extra),
      accepts,
    };
    const publisher = new Publisher({
      redis,
      codec,
      negativeTtlMs,
      writers: strategies.filter((s) => typeof s.write === "function"),
      channel,
      commandTimeoutMs,
      now,
      emit,
      reread: async (keys) => (await reader.read(keys, undefined)).entry,
    });
    for (const s of strategies) s.attach?.(context);
    for (const s of strategies) s.checkTtl?.(this.#ttlMs);
    this.#chain = compose(strategies, (req, loader) => publisher.load(req, loader));
    // Claimed only once the cache exists: a pipeline that failed to build
    // (a jitter spread above its TTL) leaves its strategies reusable.
    for (const s of strategies) joined.add(s);
  }

  keys(identity: Identity): Keys {
    if (typeof identity !== "string") return keysFor(this.#namespace, identity);
    // Hot keys are read over and over: a SHA-256 per get was a tenth of a
    // hit's CPU. The memo is bounded and simply starts over when full.
    let keys = this.#keyMemo.get(identity);
    if (keys === undefined) {
      // Frozen: the same object goes to every caller of this identity.
      keys = Object.freeze(keysFor(this.#namespace, identity));
      if (this.#keyMemo.size >= KEY_MEMO_SIZE) this.#keyMemo.clear();
      this.#keyMemo.set(identity, keys);
    }
    return keys;
  }

  stats(): CacheStats {
    return this.#rec.snapshot();
  }

  async get(identity: Identity, loader: Loader<T>, options?: GetOptions): Promise<T> {
    if (this.#closing !== undefined) throw closedError();
    // Counted from its entry, not from its fill: close() must also wait for
    // a get still reading, or that get would load or refresh after close()
    // resolved.
    this.#active++;
    try {
      func("get", "loader", loader);
      const o = optionsObject<GetOptions>("get", options);
      const timeoutMs = o.timeoutMs === undefined ? undefined : positiveInt("get", "timeoutMs", o.timeoutMs);
      let ttlMs = this.#ttlMs;
      if (o.ttlMs !== undefined) {
        ttlMs = positiveInt("get", "ttlMs", o.ttlMs);
        for (const s of this.#strategies) s.checkTtl?.(ttlMs);
      }
      const keys = this.keys(identity);
      const scope = new CallScope(keys.data, o.signal, timeoutMs);
      try {
        return (await this.#get(keys, identity, loader as Loader<unknown>, ttlMs, scope.signal)) as T;
      } catch (error) {
        if (error === scope.timedOut && timeoutMs !== undefined) {
          this.#rec.emit({ type: "timeout", key: keys.data, waitedMs: timeoutMs });
        }
        throw error;
      } finally {
        scope.dispose();
      }
    } finally {
      if (--this.#active === 0) this.#idle?.();
    }
  }

  async #get(
    keys: Keys,
    identity: Identity,
    loader: Loader<unknown>,
    ttlMs: number,
    signal: AbortSignal,
  ): Promise<unknown> {
    const key = keys.data;
    const { entry } = await this.#reader.read(keys, signal);
    let verdict = entry !== undefined && entry.freshMs > 0 ? HIT : MISS;
    for (const s of this.#readers) verdict = s.read!(verdict, entry);
    if (verdict.kind !== "miss" && entry !== undefined) {
      if (verdict.kind === "stale") this.#rec.emit({ type: "stale", key });
      else this.#rec.emit({ type: "hit", key });
      // A cache that is closing starts no refresh: close() may be about to resolve.
      if (verdict.kind !== "hit" && this.#closing === undefined) {
        this.#refresh(keys, identity, loader, ttlMs, entry, verdict.kind === "refresh");
      }
      return entry.value;
    }
    this.#rec.emit({ type: "miss", key });
    const req = request({ keys, identity, ttlMs, signal, background: false, seen: entry }, loader);
    try {
      // A get that read while close() was called loads nothing (stale-if-error still applies).
      if (this.#closing !== undefined) throw closedError();
      // A caller gone during the read must not start a load nobody waits for.
      if (signal.aborted) throw signal.reason;
      // The fill outlives a caller who leaves: an owner keeps loading and
      // publishing for the others, tracked so close() waits for it.
      return await race(this.#background.track(this.#fill(req)), signal);
    } catch (error) {
      const fallback = verdict.kind === "miss" ? verdict.fallback : undefined;
      // A caller who cancelled wants no answer; a caller whose deadline ran
      // out (timeoutMs, AbortSignal.timeout) still prefers stale to nothing.
      const cancelled = signal.aborted && !isDeadline(signal.reason);
      if (fallback === undefined || cancelled) throw error;
      // Stale-if-error: the old value beats the failure while its window lasts.
      this.#rec.emit({ type: "stale", key });
      return fallback.value;
    }
  }

  async #fill(req: FillRequest): Promise<unknown> {
    return (await this.#chain(req)).value;
  }

  #refresh(keys: Keys, identity: Identity, loader: Loader<unknown>, ttlMs: number, seen: Entry, early: boolean): void {
    // Background refreshes belong to the cache, not to a caller: nothing aborts them.
    const run = () => this.#fill(request({ keys, identity, ttlMs, signal: NEVER, background: true, seen }, loader));
    // Counted only if it starts: one already running for the key adds
    // nothing, and one over maxRefreshes is counted as dropped instead.
    this.#background.refresh(keys.data, run, early ? { type: "early-refresh", key: keys.data } : undefined);
  }

  async invalidate(identity: Identity): Promise<void> {
    const keys = this.keys(identity);
    const options = { timeoutMs: this.#commandTimeoutMs };
    // One DEL for both keys: the lease goes with the value, so an owner that
    // loaded before this point fails its token check instead of republishing.
    const deleted = this.#redis.send(["DEL", keys.data, keys.lease], options);
    // Waiters on the dropped lease take over now instead of at its expiry.
    const announced = this.#redis.send(["PUBLISH", this.#channel, keys.data], options);
    await Promise.all([deleted, announced]);
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      // New gets are refused from here on. Gets already running finish
      // first: one still reading starts no load or refresh now, and the
      // loads and refreshes started before are tracked, so the drain that
      // follows sees every one of them; what runs finishes and publishes.
      if (this.#active > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
      await this.#background.drain();
      await Promise.all([...this.#strategies.map((s) => s.close?.()), this.#wakeups.close()]);
    })();
    return this.#closing;
  }
}

// A deadline of ours, or the DOMException of AbortSignal.timeout(): the
// caller ran out of time rather than cancelling.
function isDeadline(reason: unknown): boolean {
  return isTimeoutError(reason) || (reason instanceof Error && reason.name === "TimeoutError");
}
