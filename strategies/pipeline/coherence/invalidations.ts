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
 * Where the server refuses `CLIENT TRACKING` (or the client speaks RESP2) and
 * the cache has a near tier, invalidation messages on the cache's channel
 * take tracking's place (`invalidation_messages.ts`): the same markers, the
 * same consumers, only the source differs.
 *
 * @module
 */
import { clearTimeout, setTimeout } from "node:timers";
import { isRedisReplyError } from "../../../resp/errors.ts";
import type { RedisLike, TrackingClient, TrackingListener } from "../../../resp/types.ts";
import type { InvalidationMode } from "../../types.ts";
import type { InvalidationSource } from "./invalidation_messages.ts";

// After a failed attempt to turn tracking on, the next one waits this long.
const RETRY_MS = 1000;

/** A read in flight that may be kept if no invalidation overtakes it. */
export interface Marker {
  readonly key: string;
  readonly generation: number;
  dead: boolean;
}

/** What hears invalidations. */
export interface InvalidationConsumer {
  invalidate(keys: readonly string[]): void;
  reset(): void;
}

/** True when `redis` can track reads (our RESP3 clients). */
export function isTrackingClient(redis: RedisLike): redis is TrackingClient {
  return typeof (redis as Partial<TrackingClient>).track === "function";
}

/** A refusal of `CLIENT TRACKING` that retrying will not change: no permission, no such command. */
export function isTrackingRefusal(error: unknown): boolean {
  if (error instanceof TypeError) return true;
  return isRedisReplyError(error) &&
    (error.code === "NOPERM" || /unknown (sub)?command|tracking/i.test(error.message));
}

/** One cache's view of its connection's client tracking (or of the messages standing in for it). */
export class Invalidations implements TrackingListener {
  #feed: InvalidationSource | undefined;
  readonly #fallback: InvalidationSource | undefined;
  readonly #onMode: (mode: InvalidationMode, reason: string) => void;
  #mode: InvalidationMode;
  readonly #consumers: InvalidationConsumer[] = [];
  readonly #pending = new Map<string, Marker[]>();
  #generation = 0;
  #attempt: Promise<void> | undefined;
  #retryAt = 0;
  #stop: (() => Promise<void>) | undefined;
  /** Stops asked for that a close() must wait for (the OFF of a feed stopped as it was closing or switching). */
  readonly #stopping = new Set<Promise<void>>();
  #closed = false;
  /** The clock reading of the latest `ready()` call (a refusal heard later schedules its retry from it). */
  #now = 0;
  /** How long a read waits for the first attempt, and the clock retries are scheduled on. */
  readonly #wait: { readonly timeoutMs: number; readonly now: () => number };
  #triedOnce = false;
  /** Whether the mode in force was told (once, when first on). */
  #announced = false;
  /** The first attempt while it runs (see {@linkcode whenReady}). */
  #firstAttempt: Promise<boolean> | undefined;

  /**
   * @param client the client to track reads on; undefined: this cache reads without tracking (an adapter, a
   *   RESP2 client, `wakeups: "poll"`).
   * @param fallback the invalidation messages to use when tracking is refused, or from the start without `client`.
   * @param onMode told when the mode changes, and why.
   */
  constructor(
    client: TrackingClient | undefined,
    fallback?: InvalidationSource,
    onMode: (mode: InvalidationMode, reason: string) => void = () => {},
    wait: { readonly timeoutMs: number; readonly now: () => number } = {
      timeoutMs: 1000,
      now: () => performance.now(),
    },
  ) {
    this.#wait = wait;
    this.#feed = client === undefined ? fallback : {
      start: (listener) => client.track(listener),
      get on() {
        return client.tracking;
      },
    };
    this.#fallback = client === undefined ? undefined : fallback;
    this.#mode = client !== undefined ? "tracking" : fallback !== undefined ? "messages" : "none";
    this.#onMode = onMode;
  }

  /** True when this cache asked for tracking or messages (they may still be down for a moment). */
  get wanted(): boolean {
    return this.#feed !== undefined;
  }

  /** Where invalidations come from. */
  get mode(): InvalidationMode {
    return this.#mode;
  }

  /** True while reads are covered: a read that starts now may be kept. */
  get active(): boolean {
    return this.#stop !== undefined && this.#feed!.on;
  }

  /**
   * What a read must wait for before it starts: `undefined` when there is
   * nothing to wait for (tracking is on, or not wanted), so a hit pays no
   * await. The first attempt to turn tracking on is awaited by every read
   * that starts while it runs (bounded by the cache's `commandTimeoutMs`): a burst of one key
   * must share one read, and a read sent before tracking answered would be
   * a second one. Later, while tracking is off (a refusal, a lost
   * connection), each call tries again in the background.
   */
  whenReady(): Promise<boolean> | undefined {
    if (this.#feed === undefined || this.active) return undefined;
    const attempt = this.ready(this.#wait.timeoutMs, this.#wait.now());
    if (this.#triedOnce) return this.#firstAttempt;
    this.#triedOnce = true;
    this.#firstAttempt = attempt;
    const settled = () => {
      this.#firstAttempt = undefined;
    };
    attempt.then(settled, settled);
    return attempt;
  }

  /**
   * This process wrote `keys`. Client tracking reports a connection's own
   * writes before their reply; invalidation messages come back later, so a
   * call that starts after the write resolved would still find the old
   * value near: forget them now (the message, when it comes, finds nothing).
   */
  wrote(keys: readonly string[]): void {
    if (this.#mode === "messages") this.invalidate(keys);
  }

  /** Add a consumer of invalidations. */
  consume(consumer: InvalidationConsumer): void {
    this.#consumers.push(consumer);
  }

  /**
   * Turn tracking on. Resolves `true` once it is on, `false` when this cache
   * reads without it for now: never rejects, and waits at most `timeoutMs`
   * (a server that does not answer must not hold a get). A refused or lost
   * attempt is tried again by a later call, a second apart at the least.
   */
  ready(timeoutMs: number, now: number): Promise<boolean> {
    if (this.#feed === undefined || this.#closed) return Promise.resolve(false);
    this.#now = now;
    if (this.#stop !== undefined) return Promise.resolve(true);
    if (this.#attempt === undefined && now >= this.#retryAt) this.#start(this.#feed, now);
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

  #start(feed: InvalidationSource, now: number): Promise<void> {
    const attempt: Promise<void> = feed.start(this).then(
      (stop) => {
        // Closed, or switched to messages while this attempt ran (a cluster node refused).
        if (this.#closed || feed !== this.#feed) this.#stopped(stop());
        else {
          this.#stop = stop;
          // Said once, when the cache first hears invalidations, not only on a
          // change: a dashboard learns the mode in force from the start.
          if (!this.#announced) {
            this.#announced = true;
            this.#onMode(this.#mode, `${this.#mode === "tracking" ? "client tracking" : "invalidation messages"} on`);
          }
        }
      },
      (error) => {
        // Refused for good: invalidation messages take over, started now, so
        // the call waiting on this attempt waits on theirs.
        if (feed !== this.#fallback && isTrackingRefusal(error)) {
          const next = this.#switch(error, now) ?? (feed !== this.#feed ? this.#attempt : undefined);
          if (next !== undefined) return next;
        }
        this.#retryAt = now + RETRY_MS;
      },
    ).finally(() => {
      if (this.#attempt === attempt) this.#attempt = undefined;
    });
    this.#attempt = attempt;
    return attempt;
  }

  /** Move from tracking to messages; `undefined` when there is nothing to move to (or it already moved). */
  #switch(error: unknown, now: number): Promise<void> | undefined {
    const fallback = this.#fallback;
    if (fallback === undefined || this.#mode !== "tracking" || this.#closed) return undefined;
    this.#feed = fallback;
    this.#mode = "messages";
    const stop = this.#stop;
    this.#stop = undefined;
    if (stop !== undefined) this.#stopped(stop());
    this.#announced = true;
    this.#onMode("messages", `CLIENT TRACKING was refused (${error instanceof Error ? error.message : String(error)})`);
    return this.#start(fallback, now);
  }

  /**
   * The server refused `CLIENT TRACKING` on a connection (a new one after a
   * reconnect, a cluster node): for good, when it is a permission or an
   * unknown command, and then messages take over.
   */
  refused(error: unknown): void {
    if (isTrackingRefusal(error)) void this.#switch(error, this.#now);
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

  #stopped(stopping: Promise<void>): void {
    this.#stopping.add(stopping);
    void stopping.then(() => this.#stopping.delete(stopping));
  }

  /**
   * Stop listening; consumers forget everything at once. Settles (never
   * rejects) once the server answered what stopping sends (`CLIENT TRACKING
   * OFF`, the feed's connection closing), an attempt still starting included.
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#stop !== undefined) this.#stopped(this.#stop());
    this.#stop = undefined;
    this.reset();
    // An attempt in flight stops itself when it lands (closed): wait for it, then for every stop.
    await this.#attempt;
    await Promise.all(this.#stopping);
  }
}
