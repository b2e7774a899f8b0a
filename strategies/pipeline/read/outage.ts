/**
 * Whether Redis answers, for a cache built with `onRedisDown: "local"`:
 * down after a command of the cache failed with a lost connection or ran
 * out of its `commandTimeoutMs` (or while the client says it is not
 * connected), up again when the client reconnects or a probe read
 * succeeds. While it is down, gets do not each wait for it: they are served
 * from this process (`calls/get.ts`), and one get per `probeMs` reads Redis
 * to find out whether it is back (the only way through an adapter, or on a
 * server that is connected but silent). On a cluster the state is kept per
 * node: a node down affects only the keys of its slots, and the keys of
 * every slot while a read needs the epoch from it (not tracked, or not
 * known): no entry can be checked against `clear()` meanwhile.
 *
 * @module
 */
import { isConnectionError, isTimeoutError } from "../../../resp/errors.ts";
import type { RedisLike } from "../../../resp/types.ts";
import type { CacheEvent } from "../../events.ts";
import { blamedKey } from "../failed_keys.ts";

/** What the outage state uses of its cache. */
export interface OutageParts {
  readonly redis: RedisLike;
  /** How long after a failure (or a failed probe) the next probe read goes to Redis, in ms. */
  readonly probeMs: number;
  /** The cache's monotonic clock. */
  now(): number;
  emit(event: CacheEvent): void;
  /** Told when every server is up again (entries kept through the outage are then dropped). */
  onUp?(): void;
  /** The key every read also needs from Redis now (the epoch's, when it is not tracked), if any. */
  sharedKey?(): string | undefined;
}

interface Down {
  readonly since: number;
  /** What said it was down. */
  readonly error: unknown;
  /** When the next probe may go. */
  probeAt: number;
  /** A probe read is in flight. */
  probing: boolean;
}

/** What a get does with Redis now: read it, probe it (the one read while it is down), or skip it. */
export type RedisAccess = "read" | "probe" | "skip";

/** The reachability of the servers behind one cache. */
export class Outage {
  readonly #p: OutageParts;
  readonly #nodeFor: ((key: string) => string | undefined) | undefined;
  readonly #connected: (() => boolean) | undefined;
  readonly #down = new Map<string, Down>();
  readonly #stop: (() => void) | undefined;

  constructor(parts: OutageParts) {
    this.#p = parts;
    const redis = parts.redis as { nodeFor?: (key: string) => string | undefined; connected?: unknown };
    this.#nodeFor = typeof redis.nodeFor === "function" ? (key) => redis.nodeFor!(key) : undefined;
    // A client that says whether it is connected (ours, one server) is taken at its word.
    this.#connected = this.#nodeFor === undefined && typeof redis.connected === "boolean"
      ? () => redis.connected === true
      : undefined;
    const events = (parts.redis as { onEvent?: (l: (e: { type: string }) => void) => () => void }).onEvent;
    // A reconnect brings every node of this client back at once.
    this.#stop = typeof events !== "function" ? undefined : events.call(parts.redis, (event) => {
      if (event.type === "ready" && this.#down.size > 0) { for (const node of [...this.#down.keys()]) this.#up(node); }
    });
  }

  /** Stop listening to the client (the cache closed). */
  close(): void {
    this.#stop?.();
  }

  /** True while some server of this cache is down. */
  get any(): boolean {
    return this.#down.size > 0;
  }

  /**
   * What a get of `key` does with Redis: `read` when its server is up,
   * `probe` for the one get that reads while it is down (when `probeMs` has
   * passed since the last try), `skip` for the others.
   */
  access(key: string): RedisAccess {
    if (this.#down.size === 0) {
      if (this.#connected === undefined || this.#connected()) return "read";
      this.#mark(key, undefined);
    }
    const down = this.#downFor(key);
    if (down === undefined) return "read";
    // A client that says it is not connected would only queue the probe
    // until commandTimeoutMs: its reconnect ("ready") ends the outage instead.
    if (down.probing || this.#p.now() < down.probeAt || (this.#connected !== undefined && !this.#connected())) {
      return "skip";
    }
    down.probing = true;
    return "probe";
  }

  /**
   * A command for `key` failed with `error`: when it says Redis is
   * unreachable (a lost connection, the cache's own command timeout), its
   * server is marked down and `true` returned. Anything else (Redis
   * answering with an error, the caller's own deadline or signal) tells
   * nothing either way: if it was the probe, the next get probes instead,
   * or no get would read Redis again through a client that never says it
   * reconnected (an adapter, a cluster).
   */
  failed(key: string, error: unknown): boolean {
    if (isOutage(error)) {
      this.#mark(blamedKey(error) ?? key, error);
      return true;
    }
    const down = this.#down.size === 0 ? undefined : this.#downFor(key);
    if (down !== undefined) down.probing = false;
    return false;
  }

  /** What said the server of `key` is down (for the `degraded` events of the gets served meanwhile). */
  reason(key: string): unknown {
    return this.#downFor(key)?.error ?? new Error("Redis cannot be reached");
  }

  /** A read of `key` succeeded: its server is up. */
  answered(key: string): void {
    if (this.#down.size === 0) return;
    const node = this.#node(key);
    if (this.#down.has(node)) this.#up(node);
    // The read needed the shared key too, and it answered.
    const shared = this.#p.sharedKey?.();
    const sharedNode = shared === undefined ? undefined : this.#node(shared);
    if (sharedNode !== undefined && this.#down.has(sharedNode)) this.#up(sharedNode);
  }

  // The state that decides for `key`: its server's, else that of the server
  // of the key every read needs too.
  #downFor(key: string): Down | undefined {
    const own = this.#down.get(this.#node(key));
    if (own !== undefined) return own;
    const shared = this.#p.sharedKey?.();
    return shared === undefined ? undefined : this.#down.get(this.#node(shared));
  }

  #mark(key: string, error: unknown): void {
    const node = this.#node(key);
    const now = this.#p.now();
    const down = this.#down.get(node);
    if (down !== undefined) {
      // A failed probe: the next one waits probeMs again.
      down.probing = false;
      down.probeAt = now + this.#p.probeMs;
      return;
    }
    const why = error ?? new Error("the client is not connected");
    this.#down.set(node, { since: now, error: why, probeAt: now + this.#p.probeMs, probing: false });
    this.#p.emit({ type: "redis-down", error: why });
  }

  #up(node: string): void {
    const down = this.#down.get(node)!;
    this.#down.delete(node);
    this.#p.emit({ type: "redis-up", downMs: Math.max(0, Math.round(this.#p.now() - down.since)) });
    if (this.#down.size === 0) this.#p.onUp?.();
  }

  #node(key: string): string {
    return this.#nodeFor?.(key) ?? "";
  }
}

/** Whether `error` says Redis cannot be reached: a lost or refused connection, or a command's own deadline. */
export function isOutage(error: unknown): boolean {
  return isConnectionError(error) ||
    (isTimeoutError(error) && (error.setting === "commandTimeoutMs" || error.setting === "connectTimeoutMs"));
}
