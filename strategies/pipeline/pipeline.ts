/**
 * `pipeline()`: strategies composed into a cache. This file is the cache's
 * face: each method checks its arguments and hands the call to the part
 * that serves it. ARCHITECTURE.md walks a hit and a miss through the rest:
 *
 * - `assemble.ts` builds the parts, `settings.ts` checks the options,
 *   `composition.ts` composes the strategies by what they do;
 * - `calls/`: a get top to bottom (`get.ts`), `getMany`, `warm`, the writes,
 *   and what every call shares (options, deadline, lifecycle);
 * - `read/`: keys, the envelope, the server clock, the reader;
 * - `fill/`: the fill and load chains, the publication, the loader's choices,
 *   the background work;
 * - `coherence/`: invalidations (tracking or messages), the epoch and tag versions;
 * - `waits/`: how a lease waiter hears of a publication;
 * - `report/`: stats and events, labels, Prometheus, `getEntry`'s report.
 *
 * @module
 */
import { abortSignal, checkedOptions, func, nonNegativeInt, positiveInt, raceGroup } from "../../resp/shared/mod.ts";
import type { Cache, LoadMany, WarmReport } from "../cache.ts";
import type { Strategy } from "../contract.ts";
import type { CacheStats } from "../events.ts";
import type { CloseOptions, GetOptions, PipelineOptions, SetOptions, WarmOptions } from "../options.ts";
import type { Identity, InvalidationMode, Keys, Loader } from "../types.ts";
import { assemble, type Parts } from "./assemble.ts";
import {
  CallDeadline,
  callOptions,
  GET_OPTIONS,
  getMany,
  type GetParts,
  Gets,
  Lifecycle,
  SET_OPTIONS,
  warm,
  WARM_OPTIONS,
  Writes,
} from "./calls/mod.ts";

/**
 * Compose strategies into a cache. Strategies compose by what they do, not
 * by the order given: in `pipeline(o, coalesce(), lease(), limit())` a call
 * joins an in-process load first, then takes (or waits for) the Redis lease,
 * then queues for an origin slot, whatever order the three are given in.
 *
 * @param options the Redis connection, the TTL and the cache's settings.
 * @param strategies the policies; each object joins one cache only, and each strategy once.
 * @returns the cache.
 * @throws {RangeError | TypeError} naming the first bad setting, a strategy given twice or reused across caches,
 *   or a factory given uncalled.
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
  return new PipelineCache<T>(options as PipelineOptions<unknown>, strategies);
}

const CLOSE_OPTIONS = Object.keys({ timeoutMs: true } satisfies Record<keyof CloseOptions, true>);

const MODE_GAUGE: Readonly<Record<InvalidationMode, number>> = { none: 0, tracking: 1, messages: 2 };

class PipelineCache<T> implements Cache<T> {
  // A get goes straight to the part that serves it (bound in the constructor): the hot path runs nothing here.
  readonly get: Cache<T>["get"];
  readonly getEntry: Cache<T>["getEntry"];
  readonly #parts: Parts;
  readonly #life = new Lifecycle();
  readonly #get: GetParts;
  readonly #gets: Gets;
  readonly #writes: Writes;

  constructor(options: PipelineOptions<unknown>, strategies: Strategy[]) {
    const parts = (this.#parts = assemble(options, strategies));
    const s = parts.settings;
    this.#get = {
      namespace: s.namespace,
      ttlMs: s.ttlMs,
      commandTimeoutMs: s.commandTimeoutMs,
      now: s.now,
      keys: parts.keys,
      traceName: (identity, key) => parts.labels?.name(identity) ?? key,
      lifecycle: this.#life,
      reader: parts.reader,
      near: parts.local !== undefined,
      invalidations: parts.invalidations,
      strategies: parts.strategies,
      stats: parts.stats,
      background: parts.background,
      publisher: parts.publisher,
      choices: {
        checkTtl: parts.strategies.checkTtl,
        versions: parts.versions,
        redis: s.redis,
        commandTimeoutMs: s.commandTimeoutMs,
      },
      fallbackAfterMs: parts.fallbackAfterMs,
      outage: parts.outage,
    };
    this.#gets = new Gets(this.#get);
    this.get = this.#gets.get.bind(this.#gets) as Cache<T>["get"];
    this.getEntry = this.#gets.getEntry.bind(this.#gets) as Cache<T>["getEntry"];
    this.#writes = new Writes({
      redis: s.redis,
      channel: s.channel,
      commandTimeoutMs: s.commandTimeoutMs,
      publisher: parts.publisher,
      versions: parts.versions,
      invalidations: parts.invalidations,
      unstored: parts.unstored,
      reader: parts.reader,
      strategies: parts.strategies,
      stats: parts.stats,
      local: parts.local,
    });
  }

  peek(identity: Identity): Promise<T | undefined> {
    return this.#life.run("peek", () => this.#gets.peek(identity) as Promise<T | undefined>);
  }

  getMany(identities: readonly Identity[], loadMany: LoadMany<T>, options?: GetOptions): Promise<(T | undefined)[]> {
    return this.#life.run("getMany", async () => {
      func("getMany", "loadMany", loadMany);
      if (!Array.isArray(identities)) {
        throw new TypeError(`Cannot getMany: 'identities' must be an array, got ${typeof identities}`);
      }
      const call = callOptions("getMany", options, GET_OPTIONS, this.#get.ttlMs, this.#get.strategies.checkTtl);
      const deadline = new CallDeadline(
        `${identities.length} identities`,
        "getMany",
        call.signal,
        call.timeoutMs,
        performance.now(),
        this.#life.running,
      );
      try {
        return (await getMany(this.#get, {
          identities,
          loadMany: loadMany as LoadMany<unknown>,
          ttlMs: call.ttlMs,
          tags: call.tags,
          forceFresh: call.forceFresh,
          signal: deadline.signal,
          closing: () => this.#life.closing !== undefined,
        })) as (T | undefined)[];
      } finally {
        deadline.dispose();
      }
    });
  }

  warm(identities: readonly Identity[], loader: Loader<T>, options?: WarmOptions): Promise<WarmReport> {
    return this.#life.run("warm", () => {
      func("warm", "loader", loader);
      if (!Array.isArray(identities)) {
        throw new TypeError(`Cannot warm: 'identities' must be an array, got ${typeof identities}`);
      }
      const o = checkedOptions<WarmOptions>("warm", "warm()", options, WARM_OPTIONS);
      if (o.signal !== undefined) abortSignal("warm", "signal", o.signal);
      const concurrency = positiveInt("warm", "concurrency", o.concurrency ?? 4);
      const call = callOptions(
        "warm",
        o.tags === undefined ? undefined : { tags: o.tags },
        WARM_OPTIONS,
        this.#get.ttlMs,
        this.#get.strategies.checkTtl,
      );
      const deadline = new CallDeadline(
        `${identities.length} identities`,
        "warm",
        o.signal,
        undefined,
        0,
        this.#life.running,
      );
      const signal = deadline.signal;
      const group = raceGroup(signal);
      return warm({
        identities,
        concurrency,
        signal,
        random: this.#parts.settings.random,
        key: (identity) => this.#parts.keys(identity).data,
        one: (identity, own) => this.#gets.warmOne(identity, loader as Loader<unknown>, call, own ?? signal, group),
      }).finally(() => {
        group.dispose();
        deadline.dispose();
      });
    });
  }

  set(identity: Identity, value: T, options?: SetOptions): Promise<void> {
    return this.#life.run("set", async () => {
      if (value === undefined) {
        throw new TypeError("Cannot set: the value is undefined; use invalidate() to drop a value");
      }
      const call = callOptions("set", options, SET_OPTIONS, this.#get.ttlMs, this.#get.strategies.checkTtl);
      await this.#writes.set(this.#parts.keys(identity), identity, value, call);
    });
  }

  invalidate(identity: Identity): Promise<void> {
    return this.#life.run("invalidate", () => this.#writes.invalidate(this.#parts.keys(identity)));
  }

  expire(identity: Identity): Promise<void> {
    return this.#life.run("expire", () => this.#writes.expire(this.#parts.keys(identity)));
  }

  invalidateTags(tags: readonly string[]): Promise<void> {
    return this.#life.run("invalidateTags", () => this.#writes.invalidateTags(tags));
  }

  clear(): Promise<void> {
    return this.#life.run("clear", () => this.#writes.clear());
  }

  keys(identity: Identity): Keys {
    // A copy: the memo's own object carries its eviction bit and the read in flight.
    const { data, lease } = this.#parts.keys(identity);
    return { data, lease };
  }

  stats(): CacheStats {
    const p = this.#parts;
    return p.stats.snapshot(p.local?.size ?? 0, MODE_GAUGE[p.invalidations.mode]);
  }

  invalidationMode(): InvalidationMode {
    return this.#parts.invalidations.mode;
  }

  close(options?: CloseOptions): Promise<void> {
    let timeoutMs: number | undefined;
    try {
      const o = checkedOptions<CloseOptions>("close", "close()", options, CLOSE_OPTIONS);
      timeoutMs = o.timeoutMs === undefined ? undefined : nonNegativeInt("close", "timeoutMs", o.timeoutMs);
    } catch (error) {
      return Promise.reject(error);
    }
    // New calls are refused from here on. Calls already running finish
    // first, and the loads and refreshes they started are tracked, so the
    // drain that follows sees every one of them; what runs finishes and
    // publishes, unless `timeoutMs` runs out first.
    const p = this.#parts;
    const closing = this.#life.close(() => p.background.drain(), async () => {
      await Promise.all([
        ...p.strategies.strategies.map((s) => s.close?.()),
        p.invalidations.close(),
        p.wakeups.close?.(),
      ]);
      p.outage?.close();
    }, timeoutMs);
    p.settings.waitUntil?.(closing.then(() => {}, () => {}));
    return closing;
  }
}
