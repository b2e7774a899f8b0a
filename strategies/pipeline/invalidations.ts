/**
 * The cache's side of client tracking (the client's side is
 * `resp/connection/tracking.ts`, a cluster's `resp/cluster/tracking.ts`):
 * what Redis' invalidations tell a cache, and the read/invalidate race it
 * closes. With `CLIENT TRACKING ON` (default mode) the server remembers which
 * keys this connection read and pushes an invalidation when one changes,
 * expires or is evicted. Reads and invalidations share one connection, so the
 * server sends them in order: an invalidation that concerns a value we read
 * arrives after that read's reply. But the reply's continuation runs later
 * than the push (a microtask after the chunk that carried both was decoded),
 * so a read must not be kept just because it succeeded: each read takes a
 * marker before it is sent, any invalidation of its key (or a reset) kills
 * the marker, and only a read whose marker survived may enter the near tier
 * or the version cache. An invalidation that concerns an older value kills it
 * too: that costs one more round trip later, never a stale value.
 *
 * Consumers (the near tier, the epoch and tag versions, lease waiters) hear
 * every invalidation; a reset (null invalidation on FLUSHALL, a lost
 * connection, tracking refused, a cluster topology change) makes them forget
 * everything.
 *
 * @module
 */
import { clearTimeout, setTimeout } from "node:timers";
import type { RedisLike, TrackingClient, TrackingListener } from "../../resp/types.ts";

// After a failed attempt to turn tracking on, the next one waits this long.
const RETRY_MS = 1000;

/** A read in flight that may be kept if no invalidation overtakes it. */
export interface Marker {
  readonly key: string;
  readonly generation: number;
  dead: boolean;
}

/** What hears invalidations. */
export interface TrackingConsumer {
  invalidate(keys: readonly string[]): void;
  reset(): void;
}

/** True when `redis` can track reads (our RESP3 clients). */
export function isTrackingClient(redis: RedisLike): redis is TrackingClient {
  return typeof (redis as Partial<TrackingClient>).track === "function";
}

/** One cache's view of its connection's client tracking. */
export class Tracker implements TrackingListener {
  readonly #client: TrackingClient | undefined;
  readonly #consumers: TrackingConsumer[] = [];
  readonly #pending = new Map<string, Marker[]>();
  #generation = 0;
  #attempt: Promise<void> | undefined;
  #retryAt = 0;
  #stop: (() => void) | undefined;
  #closed = false;

  /** `client` undefined: this cache reads without tracking (an adapter, a RESP2 client, `wakeups: "poll"`). */
  constructor(client: TrackingClient | undefined) {
    this.#client = client;
  }

  /** True when this cache asked for tracking (it may still be down for a moment). */
  get wanted(): boolean {
    return this.#client !== undefined;
  }

  /** True while reads are tracked: a read that starts now may be kept. */
  get active(): boolean {
    return this.#stop !== undefined && this.#client!.tracking;
  }

  /** Add a consumer of invalidations. */
  consume(consumer: TrackingConsumer): void {
    this.#consumers.push(consumer);
  }

  /**
   * Turn tracking on. Resolves `true` once it is on, `false` when this cache
   * reads without it for now: never rejects, and waits at most `timeoutMs`
   * (a server that does not answer must not hold a get). A refused or lost
   * attempt is tried again by a later call, a second apart at the least.
   */
  ready(timeoutMs: number, now: number): Promise<boolean> {
    if (this.#client === undefined || this.#closed) return Promise.resolve(false);
    if (this.#stop !== undefined) return Promise.resolve(true);
    if (this.#attempt === undefined && now >= this.#retryAt) {
      this.#attempt = this.#client.track(this).then(
        (stop) => {
          if (this.#closed) stop();
          else this.#stop = stop;
        },
        () => {
          this.#retryAt = now + RETRY_MS;
        },
      ).finally(() => (this.#attempt = undefined));
    }
    const attempt = this.#attempt;
    if (attempt === undefined) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.#stop !== undefined), timeoutMs);
      void attempt.then(() => {
        clearTimeout(timer);
        resolve(this.#stop !== undefined);
      });
    });
  }

  /** A marker for a read of `key` about to be sent, or `undefined` when it could not be kept anyway. */
  begin(key: string): Marker | undefined {
    if (!this.active) return undefined;
    const marker: Marker = { key, generation: this.#generation, dead: false };
    const list = this.#pending.get(key);
    if (list === undefined) this.#pending.set(key, [marker]);
    else list.push(marker);
    return marker;
  }

  /** End the read `marker` stood for; true when no invalidation or reset overtook it. */
  end(marker: Marker | undefined): boolean {
    if (marker === undefined) return false;
    const list = this.#pending.get(marker.key);
    if (list !== undefined) {
      const i = list.indexOf(marker);
      if (i >= 0) list.splice(i, 1);
      if (list.length === 0) this.#pending.delete(marker.key);
    }
    return !marker.dead && marker.generation === this.#generation && this.active;
  }

  invalidate(keys: readonly string[]): void {
    for (const key of keys) {
      const list = this.#pending.get(key);
      if (list === undefined) continue;
      for (const marker of list) marker.dead = true;
      this.#pending.delete(key);
    }
    for (const consumer of this.#consumers) consumer.invalidate(keys);
  }

  reset(): void {
    this.#generation++;
    for (const list of this.#pending.values()) for (const marker of list) marker.dead = true;
    this.#pending.clear();
    for (const consumer of this.#consumers) consumer.reset();
  }

  /** Stop listening; consumers forget everything. */
  close(): void {
    this.#closed = true;
    this.#stop?.();
    this.#stop = undefined;
    this.reset();
  }
}
