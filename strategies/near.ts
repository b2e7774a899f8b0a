/**
 * `near()`: an in-process tier in front of Redis, kept coherent by Redis'
 * own client tracking (or, where it is refused, by herdless' invalidation
 * messages).
 *
 * @module
 */
import { checkedOptions, positiveInt } from "../resp/shared/mod.ts";
import type { CacheContext, LocalTier, StoredEntry, Strategy } from "./contract.ts";

/** Options of {@linkcode near}. */
export interface NearOptions {
  /** Most entries held; past it the least recently useful one leaves (SIEVE eviction). @default {10000} */
  maxEntries?: number;
  /**
   * Most bytes held, counted by each value's stored size, its payload
   * inflated when `compressed()` deflated it (a small stored entry may hold a
   * large value); unset: no byte bound.
   */
  maxBytes?: number;
  /**
   * The longest an entry stays near, in ms, whatever its own windows say: a
   * bound on how long a value can be served if an invalidation were ever
   * lost. Unset: an entry stays until Redis invalidates it, it is evicted or
   * its stored lifetime ends.
   */
  ttlMs?: number;
}

/** Every option of {@linkcode NearOptions}: any other key is refused, naming the close one. */
const NEAR_OPTIONS = Object.keys(
  { maxEntries: true, maxBytes: true, ttlMs: true } satisfies Record<keyof NearOptions, true>,
);

/** The strategy {@linkcode near} returns, with its settings. */
export interface NearStrategy extends Strategy {
  /** Always `"near"`. */
  readonly name: "near";
  /** The `maxEntries` option. */
  readonly maxEntries: number;
  /** The `maxBytes` option; `undefined`: no byte bound. */
  readonly maxBytes: number | undefined;
  /** The `ttlMs` option; `undefined`: entries stay until invalidated, evicted or over. */
  readonly ttlMs: number | undefined;
  /** The tier itself (what the pipeline consults and keeps coherent). */
  readonly local: LocalTier;
}

interface Node {
  readonly key: string;
  entry: StoredEntry;
  /** On the local clock; 0: none (a small integer, not a boxed Infinity, in every node). */
  deadline: number;
  visited: boolean;
  /** Towards the newest. */
  newer: Node | undefined;
  /** Towards the oldest. */
  older: Node | undefined;
}

/**
 * Keep decoded entries in process memory and serve a hit without sending
 * anything to Redis. The pipeline turns on `CLIENT TRACKING` (default mode)
 * on its RESP3 connection: Redis remembers the keys it read and pushes an
 * invalidation when any writer changes one (this cache, another process,
 * `redis-cli`, an expiry, an eviction), and an entry leaves at once. It also
 * leaves when its own lifetime ends (or `ttlMs`), when evicted, and every
 * entry leaves on FLUSHALL/FLUSHDB, on any loss of the connection, when
 * tracking is refused, and on a cluster topology change. A read that an
 * invalidation overtook is never kept. Near entries keep their server-time
 * windows, so `xfetch()` still refreshes early, `swr()` still serves stale
 * with one background refresh and `lease()` still lets one process load.
 *
 * Values are shared, decoded once: every caller gets the same object, so
 * treat it as read-only (copy before mutating).
 *
 * Where `CLIENT TRACKING` is refused (an ACL without `client|tracking`,
 * a managed service, `CLIENT` renamed away) or the client speaks RESP2, the
 * tier is kept coherent by the invalidation messages every herdless writer
 * publishes on the namespace's channel, heard on a connection the pipeline
 * opens with `redis.duplicate()`: writes by other programs are then seen only
 * at the entry's deadline (bound it with `ttlMs`). `cache.invalidationMode()`
 * says which is in force.
 *
 * Needs a herdless client (`connect()` or `connectCluster()`); building the
 * pipeline on an adapter is a `TypeError`.
 *
 * @param options the bounds.
 * @returns a strategy for `pipeline()`; one object per cache.
 * @throws {RangeError} when `maxEntries`, `maxBytes` or `ttlMs` is not a positive integer.
 * @example A hot key served from memory, kept honest by Redis
 * ```ts
 * import { coalesce, connect, lease, near, pipeline } from "@herdless/herdless";
 * const redis = await connect({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", resp: 3 });
 * const cache = pipeline({ redis, ttlMs: 60_000 }, near({ maxEntries: 50_000 }), coalesce(), lease());
 * await cache.get("config", () => ({ theme: "dark" })); // loaded and published
 * await cache.get("config", () => ({ theme: "dark" })); // read from Redis once, kept near
 * await cache.get("config", () => ({ theme: "dark" })); // from memory: nothing sent to Redis
 * console.log(cache.stats().nearHits); // 1
 * await cache.close();
 * await redis.close();
 * ```
 */
export function near(options?: NearOptions): NearStrategy {
  const o = checkedOptions<NearOptions>("create near", "near()", options, NEAR_OPTIONS);
  const maxEntries = positiveInt("create near", "maxEntries", o.maxEntries ?? 10_000);
  const maxBytes = o.maxBytes === undefined ? undefined : positiveInt("create near", "maxBytes", o.maxBytes);
  const ttlMs = o.ttlMs === undefined ? undefined : positiveInt("create near", "ttlMs", o.ttlMs);
  let now: () => number = () => performance.now();
  const tier = new SieveTier(maxEntries, maxBytes ?? Infinity, () => now());
  const local: LocalTier = {
    get: (key) => tier.get(key),
    // The entry's own lifetime is judged on every hit against the server
    // clock; the tier keeps a deadline of its own only for `ttlMs`.
    set: (key, entry) => tier.set(key, entry, ttlMs === undefined ? 0 : now() + ttlMs),
    delete: (key) => tier.delete(key),
    clear: () => tier.clear(),
    get size() {
      return tier.size;
    },
    maxEntries,
  };
  return {
    name: "near",
    maxEntries,
    maxBytes,
    ttlMs,
    local,
    attach(c: CacheContext) {
      now = c.now;
      c.addLocalTier(local);
    },
  };
}

/**
 * A bounded map with SIEVE eviction (Zhang et al., NSDI 2024): entries sit
 * in insertion order with a "visited" bit set by hits; the hand walks from
 * the oldest, clearing bits, and evicts the first unvisited one. A hit costs
 * one store, never a move: cheaper than LRU and, on skewed workloads, as
 * good or better at keeping the hot set.
 */
export class SieveTier {
  readonly #map = new Map<string, Node>();
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  readonly #now: () => number;
  #newest: Node | undefined;
  #oldest: Node | undefined;
  #hand: Node | undefined;
  #bytes = 0;

  constructor(maxEntries: number, maxBytes: number, now: () => number) {
    this.#maxEntries = maxEntries;
    this.#maxBytes = maxBytes;
    this.#now = now;
  }

  get size(): number {
    return this.#map.size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get(key: string): StoredEntry | undefined {
    const node = this.#map.get(key);
    if (node === undefined) return undefined;
    if (node.deadline !== 0 && this.#now() >= node.deadline) {
      this.#remove(node);
      return undefined;
    }
    node.visited = true;
    return node.entry;
  }

  /** Hold `entry` until `deadline` on the local clock (0: no deadline of its own). */
  set(key: string, entry: StoredEntry, deadline: number): void {
    if (entry.size > this.#maxBytes) {
      this.delete(key);
      return;
    }
    const existing = this.#map.get(key);
    if (existing !== undefined) {
      this.#bytes += entry.size - existing.entry.size;
      existing.entry = entry;
      existing.deadline = deadline;
    } else {
      const node: Node = { key, entry, deadline, visited: false, newer: undefined, older: this.#newest };
      if (this.#newest !== undefined) this.#newest.newer = node;
      this.#newest = node;
      this.#oldest ??= node;
      this.#map.set(key, node);
      this.#bytes += entry.size;
    }
    while (this.#map.size > this.#maxEntries || this.#bytes > this.#maxBytes) this.#evict();
  }

  delete(key: string): boolean {
    const node = this.#map.get(key);
    if (node === undefined) return false;
    this.#remove(node);
    return true;
  }

  clear(): void {
    this.#map.clear();
    this.#newest = this.#oldest = this.#hand = undefined;
    this.#bytes = 0;
  }

  #evict(): void {
    let node = this.#hand ?? this.#oldest;
    while (node !== undefined && node.visited) {
      node.visited = false;
      node = node.newer ?? this.#oldest;
    }
    if (node === undefined) return;
    this.#hand = node.newer;
    this.#remove(node);
  }

  #remove(node: Node): void {
    if (this.#map.get(node.key) !== node) return;
    this.#map.delete(node.key);
    this.#bytes -= node.entry.size;
    if (this.#hand === node) this.#hand = node.newer;
    if (node.newer !== undefined) node.newer.older = node.older;
    else this.#newest = node.older;
    if (node.older !== undefined) node.older.newer = node.newer;
    else this.#oldest = node.newer;
  }
}
