/**
 * One cache's parts, built once when `pipeline()` runs: the settings
 * checked, the strategies composed and attached (they declare what they
 * need then: a local tier, a bound on refreshes, a fallback timer), then
 * what hears invalidations, the versions, the clock, the reader, the
 * publisher, the wake-ups and the background work, each handed what it
 * uses. `pipeline.ts` gives each call the parts it uses.
 *
 * @module
 */
import type { RedisLike, TrackingClient } from "../../resp/types.ts";
import type { CacheContext, LocalTier, Strategy, Wakeups } from "../contract.ts";
import type { CacheEvent } from "../events.ts";
import type { PipelineOptions } from "../options.ts";
import type { Identity } from "../types.ts";
import {
  epochKeyOf,
  InvalidationMessages,
  Invalidations,
  isDuplicable,
  isTrackingClient,
  NearTier,
  Versions,
} from "./coherence/mod.ts";
import { claim, composeStrategies, type Composition } from "./composition.ts";
import { BackgroundWork, isWriteRefusal, Publisher } from "./fill/mod.ts";
import { accepts, KeyMemo, Outage, Reader, ServerClock, type SharedKeys, Unstored } from "./read/mod.ts";
import { Labels, Stats } from "./report/mod.ts";
import { checkSettings, type Settings } from "./settings.ts";
import { ChannelWakeups, POLLING, TrackedWakeups } from "./waits/mod.ts";

/** The parts of one cache. */
export interface Parts {
  readonly settings: Settings;
  readonly strategies: Composition;
  readonly stats: Stats;
  readonly labels: Labels | undefined;
  readonly local: NearTier | undefined;
  readonly invalidations: Invalidations;
  readonly versions: Versions;
  readonly unstored: Unstored;
  readonly reader: Reader;
  readonly publisher: Publisher;
  readonly wakeups: Wakeups & { close?(): Promise<void> };
  readonly background: BackgroundWork;
  /** swr's soft timeout, if declared. */
  readonly fallbackAfterMs: number | undefined;
  /** Whether Redis answers, with `onRedisDown: "local"`; undefined otherwise (a dead Redis is an error). */
  readonly outage: Outage | undefined;
  /** The keys of `identity`, remembered (and its label, while someone listens to events). */
  keys(identity: Identity): SharedKeys;
}

/** The keys the memo remembers at the least, and at least as many as a near tier holds. */
const KEY_MEMO_SIZE = 10_000;

/** Build the parts of a cache from its options and strategies. */
export function assemble(options: PipelineOptions<unknown>, given: readonly Strategy[]): Parts {
  const settings = checkSettings(options);
  const { redis, namespace, channel, commandTimeoutMs, now } = settings;
  let labels: Labels | undefined;
  const stats = new Stats(settings.onEvent, namespace, (key) => labels?.of(key));
  if (settings.label !== undefined) labels = new Labels(settings.label, () => stats.hookFailed());
  const emit = (event: CacheEvent) => stats.emit(event);
  const strategies = composeStrategies(given);
  if (settings.onRedisDown === "local" && !strategies.sharesInProcess) {
    throw new TypeError(
      `Cannot create pipeline: onRedisDown "local" needs coalesce(), so that while Redis is down each identity ` +
        `is loaded once in this process, not once per caller`,
    );
  }

  // The strategies attach first: what they declare shapes the rest.
  const declared = attach(strategies.strategies, settings, emit, () => built);
  const local = declared.local === undefined ? undefined : new NearTier(
    declared.local,
    epochKeyOf(namespace),
    emit,
    // Kept through a lost connection (suspect) only when the cache serves from memory while Redis is down.
    settings.onRedisDown === "local" ? () => (redis as { connected?: boolean }).connected === false : undefined,
  );
  const trackable = isTrackingClient(redis) && (redis as { resp?: number }).resp === 3;
  // Tracking is what lets a RESP3 cache keep its versions in memory, wake
  // lease waiters without pub/sub and keep a near tier coherent. A near
  // tier where tracking is refused, or over RESP2, hears the invalidation
  // messages writers publish instead, on a connection of its own.
  const messages = local !== undefined && isDuplicable(redis)
    ? new InvalidationMessages(redis, channel, commandTimeoutMs)
    : undefined;
  const invalidations = new Invalidations(
    trackable && (settings.wakeups !== "poll" || local !== undefined) ? (redis as TrackingClient) : undefined,
    messages,
    (mode, reason) => emit({ type: "invalidation-mode", mode, reason }),
    { timeoutMs: commandTimeoutMs, now },
  );
  if (local !== undefined) invalidations.consume(local);
  const degrade = (key: string, error: unknown) => {
    if (!settings.failOpen || !isWriteRefusal(error)) return false;
    emit({ type: "degraded", key, error });
    return true;
  };
  const versions = new Versions({
    redis,
    namespace,
    invalidations,
    commandTimeoutMs,
    now,
    channel,
    // Not counted here: the get it serves is counted once, where its write is refused.
    servesThrough: (error) => settings.failOpen && isWriteRefusal(error),
  });
  const clock = new ServerClock({ redis, now, commandTimeoutMs, shared: settings.defaultNow });
  const unstored = new Unstored();
  // Another writer's change of a key retires the value kept for it.
  invalidations.consume(unstored);
  // The outage is built below, after the publisher that calls this: a
  // write fails only once the cache runs.
  const unreachable = (key: string, error: unknown) => {
    if (outage === undefined || !outage.failed(key, error)) return false;
    emit({ type: "degraded", key, error });
    return true;
  };
  const reader = new Reader({
    redis,
    codec: settings.codec,
    commandTimeoutMs,
    clock,
    invalidations,
    versions,
    local,
    now,
    unstored,
    schema: settings.schema,
    emit,
  });
  const publisher = new Publisher({
    redis,
    codec: settings.codec,
    negativeTtlMs: settings.negativeTtlMs,
    write: (plan) => strategies.write(plan),
    channel,
    commandTimeoutMs,
    maxValueBytes: settings.maxValueBytes,
    degrade,
    ...(settings.onRedisDown === "local" ? { unreachable } : {}),
    versions,
    now,
    label: settings.label,
    schema: settings.schema,
    unstored,
    clock,
    emit,
    reread: async (keys) => (await reader.lookup(keys, undefined)).entry,
    ...(messages === undefined ? {} : { wrote: (keys) => invalidations.wrote([keys.data, keys.lease]) }),
  });
  const wakeups = settings.wakeups === "poll"
    ? POLLING
    : settings.wakeups === "auto"
    ? (invalidations.wanted ? new TrackedWakeups(invalidations) : POLLING)
    : new ChannelWakeups({ wakeups: settings.wakeups, redis, channel, commandTimeoutMs, now });
  const memo = new KeyMemo(namespace, Math.max(KEY_MEMO_SIZE, local?.maxEntries ?? 0));
  const built: Built = { reader, wakeups, degrade };
  const outage = settings.onRedisDown === "error" ? undefined : new Outage({
    redis,
    probeMs: settings.probeMs,
    now,
    emit,
    onUp: () => local?.trust(),
    // Every read needs the epoch from its server unless it is tracked and known.
    sharedKey: () => invalidations.active && versions.epochKnown ? undefined : versions.epochKey,
  });
  for (const s of strategies.strategies) s.checkTtl?.(settings.ttlMs);
  claim(strategies.strategies);
  return {
    settings,
    strategies,
    stats,
    labels,
    local,
    invalidations,
    versions,
    unstored,
    reader,
    publisher,
    wakeups,
    background: new BackgroundWork(declared.maxRefreshes ?? 16, emit, settings.waitUntil),
    fallbackAfterMs: declared.fallbackAfterMs,
    outage,
    // The memo's own method, bound, when there is no label to remember: a hit runs nothing of this file.
    keys: labels === undefined ? memo.keys.bind(memo) : (identity) => {
      const keys = memo.keys(identity);
      // Labels are wanted only by someone listening to events: without one, none is computed.
      if (stats.listening) labels!.remember(keys.data, identity);
      return keys;
    },
  };
}

/** What the strategies' context reaches once the cache is built. */
interface Built {
  readonly reader: Reader;
  readonly wakeups: Wakeups;
  degrade(key: string, error: unknown): boolean;
}

/** What the strategies declared while attaching. */
interface Declared {
  local: LocalTier | undefined;
  maxRefreshes: number | undefined;
  fallbackAfterMs: number | undefined;
}

// Attach every strategy, in the order given, with a context whose
// declarations are accepted only while attaching; its reads, wake-ups and
// write refusals reach the parts built after (`built()`).
function attach(
  strategies: readonly Strategy[],
  settings: Settings,
  emit: (event: CacheEvent) => void,
  built: () => Built,
): Declared {
  const declared: Declared = { local: undefined, maxRefreshes: undefined, fallbackAfterMs: undefined };
  let attaching: string | undefined;
  const during = (what: string) => {
    if (attaching === undefined) throw new TypeError(`Cannot ${what}: only while a strategy attaches`);
    return attaching;
  };
  const { redis } = settings;
  const context: CacheContext = {
    redis,
    namespace: settings.namespace,
    channel: settings.channel,
    ttlMs: settings.ttlMs,
    commandTimeoutMs: settings.commandTimeoutMs,
    now: settings.now,
    random: settings.random,
    get wakeups() {
      return built().wakeups;
    },
    emit,
    read: (keys, signal, extra) => built().reader.lookup(keys, signal, extra),
    accepts,
    degrade: (key, error) => built().degrade(key, error),
    addLocalTier(tier) {
      const name = during("add a local tier");
      if (declared.local !== undefined) {
        throw new TypeError("Cannot create pipeline: at most one near() tier per pipeline");
      }
      if (!canHearInvalidations(redis)) {
        throw new TypeError(
          `Cannot create pipeline: ${name}() needs invalidations, which only a herdless client ` +
            `(connect() or connectCluster()) receives: an adapter cannot`,
        );
      }
      declared.local = tier;
    },
    limitRefreshes(max) {
      during("limit refreshes");
      declared.maxRefreshes = Math.min(declared.maxRefreshes ?? Infinity, max);
    },
    fallbackAfter(ms) {
      during("declare a fallback timer");
      declared.fallbackAfterMs = Math.min(declared.fallbackAfterMs ?? Infinity, ms);
    },
  };
  for (const s of strategies) {
    attaching = s.name;
    try {
      s.attach?.(context);
    } finally {
      attaching = undefined;
    }
  }
  return declared;
}

function canHearInvalidations(redis: RedisLike): boolean {
  return (isTrackingClient(redis) && (redis as { resp?: number }).resp === 3) || isDuplicable(redis);
}
