/**
 * One cache's parts, validated and wired once when `pipeline()` runs: the
 * settings, the reader and publisher, the fill chain (the strategies' `fill`
 * hooks around the publisher) and the load chain (their `load` hooks around
 * the origin call), the server clock, the tracking of reads with what hears
 * it (versions, near tier, wake-ups), the counters and the background work.
 * `get`, `getMany`, `warm` and the rest share these.
 *
 * @module
 */
import { func, nonNegativeInt, optionsObject, positiveInt } from "../../resp/shared/mod.ts";
import type { RedisLike, TrackingClient } from "../../resp/types.ts";
import { resolveCodec } from "../codec.ts";
import type {
  CacheContext,
  CacheEvent,
  Fill,
  Identity,
  Keys,
  Load,
  LocalTier,
  Strategy,
  Verdict,
  Wakeups,
} from "../types.ts";
import { Background } from "./background.ts";
import type { PipelineOptions } from "./cache_types.ts";
import { compose } from "./chain.ts";
import { ServerClock } from "./clock.ts";
import { KeyMemo } from "./key_memo.ts";
import { checkNamespace } from "./keys.ts";
import { composeLoad, isWriteRefusal, Publisher } from "./publish.ts";
import { ChannelWakeups } from "./pubsub_wakeups.ts";
import { accepts, Reader } from "./read.ts";
import { Recorder } from "./stats.ts";
import { isDuplicable, MessageFeed } from "./invalidation_messages.ts";
import { isTrackingClient, Tracker } from "./invalidations.ts";
import { Unstored } from "./unstored.ts";
import { Versions } from "./versions.ts";
import { POLLING, TrackedWakeups } from "./wakeups.ts";

const KEY_MEMO_SIZE = 10_000;
const joined = new WeakSet<Strategy>();
const WHERE = "create pipeline";

/** Everything a cache is made of. */
export class Core {
  readonly redis: RedisLike;
  readonly namespace: string;
  readonly ttlMs: number;
  readonly commandTimeoutMs: number;
  readonly channel: string;
  /** The local monotonic clock (durations only). */
  readonly now: () => number;
  /** The `waitUntil` option: where work that outlives a call is handed over. */
  readonly waitUntil: ((work: Promise<unknown>) => void) | undefined;
  readonly random: () => number;
  readonly rec: Recorder;
  readonly strategies: readonly Strategy[];
  readonly readers: readonly Strategy[];
  /** The strategies told when a key's running loads are superseded (coalesce()). */
  readonly #superseders: readonly Strategy[];
  readonly local: LocalTier | undefined;
  readonly tracker: Tracker;
  readonly versions: Versions;
  /** Values served uncached (Redis refused writes), kept so this process never serves an older one after them. */
  readonly unstored = new Unstored();
  readonly clock: ServerClock;
  readonly reader: Reader;
  readonly publisher: Publisher;
  readonly wakeups: Wakeups & { close?(): Promise<void> };
  readonly background: Background;
  readonly chain: Fill;
  readonly load: Load;
  readonly #keyMemo: KeyMemo;
  /** The caller's `label` option, or undefined (events then name hashed keys only). */
  readonly label: ((identity: Identity) => string) | undefined;
  /** Data key -> label of the identities seen lately (only with `label`), so events can name them. */
  readonly #labels = new Map<string, string>();
  #tracked = false;
  /** The first tracking attempt while it runs (see {@linkcode ready}). */
  #firstAttempt: Promise<boolean> | undefined;

  constructor(options: PipelineOptions<unknown>, strategies: Strategy[]) {
    const o = optionsObject<PipelineOptions<unknown>>(WHERE, options);
    const redis = o.redis;
    if (redis === null || typeof redis !== "object" || typeof redis.send !== "function") {
      throw new TypeError("Cannot create pipeline: 'redis' must be an object with a send(command, options) function");
    }
    this.redis = redis;
    this.ttlMs = positiveInt(WHERE, "ttlMs", o.ttlMs);
    this.namespace = checkNamespace(o.namespace ?? "herdless");
    const negativeTtlMs = nonNegativeInt(WHERE, "negativeTtlMs", o.negativeTtlMs ?? 0);
    const commandTimeoutMs =
      (this.commandTimeoutMs = positiveInt(WHERE, "commandTimeoutMs", o.commandTimeoutMs ?? 1000));
    const maxValueBytes = positiveInt(WHERE, "maxValueBytes", o.maxValueBytes ?? 512 * 1024 * 1024);
    const failOpen = o.failOpen ?? true;
    if (typeof failOpen !== "boolean") throw new TypeError(`Cannot create pipeline: 'failOpen' must be a boolean`);
    const codec = resolveCodec(o.codec);
    const wakeupSource = o.wakeups ?? "auto";
    if (
      wakeupSource !== "auto" && wakeupSource !== "poll" &&
      typeof (wakeupSource as { onPush?: unknown })?.onPush !== "function"
    ) {
      throw new TypeError(`Cannot create pipeline: 'wakeups' must be "auto", "poll" or a RESP3 client with onPush()`);
    }
    const now = (this.now = func<() => number>(WHERE, "now", o.now ?? (() => performance.now())));
    const random = (this.random = func<() => number>(WHERE, "random", o.random ?? Math.random));
    const onEvent = o.onEvent === undefined ? undefined : func<(e: CacheEvent) => void>(WHERE, "onEvent", o.onEvent);
    const waitUntil =
      (this.waitUntil = o.waitUntil === undefined
        ? undefined
        : func<(work: Promise<unknown>) => void>(WHERE, "waitUntil", o.waitUntil));
    const label = o.label === undefined ? undefined : func<(id: Identity) => string>(WHERE, "label", o.label);
    this.label = label;
    this.rec = new Recorder(onEvent, this.namespace, label === undefined ? undefined : (key) => this.#labels.get(key));
    checkStrategies(strategies);
    this.strategies = strategies;
    this.readers = strategies.filter((s) => typeof s.read === "function");
    this.#superseders = strategies.filter((s) => typeof s.superseded === "function");
    const locals = strategies.filter((s) => s.local !== undefined);
    if (locals.length > 1) throw new TypeError("Cannot create pipeline: at most one near() tier per pipeline");
    const local = (this.local = locals[0]?.local);
    // Sized with the near tier: every identity it holds keeps its keys remembered.
    const nearEntries = (locals[0] as { maxEntries?: unknown } | undefined)?.maxEntries;
    this.#keyMemo = new KeyMemo(
      this.namespace,
      typeof nearEntries === "number" ? Math.max(KEY_MEMO_SIZE, nearEntries) : KEY_MEMO_SIZE,
    );
    const trackable = isTrackingClient(redis) && resp(redis) === 3;
    const needsTracking = strategies.find((s) => s.needsTracking === true);
    if (needsTracking !== undefined && !trackable && !isDuplicable(redis)) {
      throw new TypeError(
        `Cannot create pipeline: ${needsTracking.name}() needs invalidations, which only a herdless client ` +
          `(connect() or connectCluster()) receives: an adapter cannot`,
      );
    }
    const cap = Math.min(...strategies.map((s) => s.maxRefreshes ?? Infinity));
    const emit = (event: CacheEvent) => this.rec.emit(event);
    this.background = new Background(cap === Infinity ? 16 : cap, emit, waitUntil);
    const channel = (this.channel = `${this.namespace}:published`);
    // Tracking is what lets a RESP3 cache keep its versions in memory, wake
    // lease waiters without pub/sub and keep a near tier coherent. A near
    // tier where tracking is refused, or over RESP2, hears the invalidation
    // messages writers publish instead, on a connection of its own.
    const messages = local !== undefined && isDuplicable(redis)
      ? new MessageFeed(redis, channel, commandTimeoutMs)
      : undefined;
    const tracker = (this.tracker = new Tracker(
      trackable && (wakeupSource !== "poll" || local !== undefined) ? (redis as TrackingClient) : undefined,
      messages,
      (mode, reason) => emit({ type: "invalidation-mode", mode, reason }),
    ));
    const degrade = (key: string, error: unknown) => {
      if (!failOpen || !isWriteRefusal(error)) return false;
      emit({ type: "degraded", key, error });
      return true;
    };
    const versions = (this.versions = new Versions({
      redis,
      namespace: this.namespace,
      tracker,
      commandTimeoutMs,
      channel,
      // Not counted here: the get it serves is counted once, where its write is refused.
      servesThrough: (error) => failOpen && isWriteRefusal(error),
    }));
    const clock = (this.clock = new ServerClock({ redis, now, commandTimeoutMs, shared: o.now === undefined }));
    if (local !== undefined) this.#keepCoherent(local);
    const reader = (this.reader = new Reader({
      redis,
      codec,
      commandTimeoutMs,
      clock,
      tracker,
      versions,
      local,
      now,
      unstored: this.unstored,
      emit,
    }));
    this.wakeups = wakeupSource === "poll"
      ? POLLING
      : wakeupSource === "auto"
      ? (tracker.wanted ? new TrackedWakeups(tracker) : POLLING)
      : new ChannelWakeups({ wakeups: wakeupSource, redis, channel, commandTimeoutMs, now });
    const context: CacheContext = {
      redis,
      namespace: this.namespace,
      channel,
      ttlMs: this.ttlMs,
      commandTimeoutMs,
      now,
      random,
      wakeups: this.wakeups,
      emit,
      read: (keys, signal, extra) => reader.lookup(keys, signal, extra),
      accepts,
      degrade,
    };
    this.publisher = new Publisher({
      redis,
      codec,
      negativeTtlMs,
      writers: strategies.filter((s) => typeof s.write === "function"),
      channel,
      commandTimeoutMs,
      maxValueBytes,
      degrade,
      versions,
      now,
      label,
      unstored: this.unstored,
      clock,
      emit,
      reread: async (keys) => (await reader.lookup(keys, undefined)).entry,
      ...(messages === undefined ? {} : { wrote: (keys: Keys) => this.wrote([keys.data, keys.lease]) }),
    });
    for (const s of strategies) s.attach?.(context);
    for (const s of strategies) s.checkTtl?.(this.ttlMs);
    this.load = composeLoad(strategies);
    this.chain = compose(strategies);
    // Claimed only once the cache exists: a pipeline that failed to build
    // (a jitter spread above its TTL) leaves its strategies reusable.
    for (const s of strategies) joined.add(s);
  }

  /** The Redis keys of `identity`. */
  keys(identity: Identity): Keys {
    const keys = this.#keyMemo.keys(identity);
    // Labels are wanted only by someone listening to events: without one, none is computed.
    if (this.label !== undefined && this.rec.listening) this.#remember(keys.data, identity);
    return keys;
  }

  /** The label of `identity` (the caller's `label` option), or the data key when there is none or it threw. */
  traceName(identity: Identity, key: string): string {
    return (this.label === undefined ? undefined : this.#labelOf(identity)) ?? key;
  }

  // A label that throws names nothing (the key stands in) and is counted in
  // eventErrors: a logging aid must never fail a get.
  #labelOf(identity: Identity): string | undefined {
    try {
      const label = this.label!(identity);
      return typeof label === "string" ? label : String(label);
    } catch {
      this.rec.hookFailed();
      return undefined;
    }
  }

  // Bounded like the key memo: an event for a key forgotten since names no label, nothing breaks.
  #remember(key: string, identity: Identity): void {
    if (this.#labels.has(key)) return;
    const label = this.#labelOf(identity);
    if (label === undefined) return;
    if (this.#labels.size >= KEY_MEMO_SIZE) this.#labels.clear();
    this.#labels.set(key, label);
  }

  /**
   * Resolves once tracking was tried, for the first read of a tracking
   * cache (bounded by `commandTimeoutMs`); later, while tracking is off (a
   * refusal, a lost connection), it tries again in the background. Returns
   * `undefined` when there is nothing to wait for, so hits pay no await.
   */
  ready(): Promise<boolean> | undefined {
    const tracker = this.tracker;
    if (!tracker.wanted || tracker.active) return undefined;
    const attempt = tracker.ready(this.commandTimeoutMs, this.now());
    // Every get that starts while the first attempt runs waits for it too:
    // a burst of one key must share one read, and a read sent before
    // tracking answered would be a second one (the first caller's, after it).
    if (this.#tracked) return this.#firstAttempt;
    this.#tracked = true;
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
    if (this.tracker.mode === "messages") this.tracker.invalidate(keys);
  }

  /** Tell the strategies that loads running for `key` (every key without one) are superseded (a hit, an invalidation, a set). */
  supersede(key?: string): void {
    for (const s of this.#superseders) s.superseded!(key);
  }

  /** The read strategies' verdict on `entry`. */
  verdict(entry: { freshMs: number } | undefined): Verdict {
    let verdict: Verdict = entry !== undefined && entry.freshMs > 0 ? HIT : MISS;
    for (const s of this.readers) verdict = s.read!(verdict, entry as never);
    return verdict;
  }

  /** Release tracking and subscriptions. */
  async close(): Promise<void> {
    await Promise.all([this.tracker.close(), this.wakeups.close?.()]);
  }

  // The near tier forgets what Redis invalidates, and everything on a reset
  // or when the epoch moves (every entry under the old one is a miss).
  #keepCoherent(local: LocalTier): void {
    const epochKey = `${this.namespace}:epoch`;
    this.tracker.consume({
      invalidate: (keys) => {
        let dropped = 0;
        let all = false;
        for (const key of keys) {
          if (key === epochKey) all = true;
          else if (local.delete(key)) dropped++;
        }
        if (all) {
          dropped += local.size;
          local.clear();
        }
        if (dropped > 0) {
          this.rec.emit({ type: "near-invalidation", key: keys.length === 1 ? keys[0] : undefined, count: dropped });
        }
      },
      reset: () => {
        const dropped = local.size;
        local.clear();
        if (dropped > 0) this.rec.emit({ type: "near-invalidation", key: undefined, count: dropped });
      },
    });
  }
}

const HIT: Verdict = Object.freeze({ kind: "hit" });
const MISS: Verdict = Object.freeze({ kind: "miss" });

function resp(redis: RedisLike): number | undefined {
  return (redis as { resp?: number }).resp;
}

function checkStrategies(strategies: readonly Strategy[]): void {
  strategies.forEach((s, i) => {
    if (s === null || typeof s !== "object" || typeof s.name !== "string") {
      throw new TypeError(`Cannot create pipeline: strategy ${i + 1} must be an object returned by a strategy factory`);
    }
    if (joined.has(s)) {
      throw new TypeError(
        `Cannot create pipeline: this ${s.name}() strategy already belongs to another cache; call ${s.name}() once per pipeline`,
      );
    }
  });
}
