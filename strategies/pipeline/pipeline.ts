/**
 * `pipeline()`: strategies composed into a cache. A `get` reads the entry
 * (from the near tier, or one round trip), lets the read strategies judge it,
 * and on a miss runs the fill chain (first strategy outermost) down to the
 * origin load and its publication. This file is the cache's face; the rest
 * of this folder is the machinery behind it: `core.ts` wires the parts,
 * `get.ts` serves a get, `read.ts` reads an entry, `publish.ts` loads and
 * publishes, `batch.ts` is `getMany`, `warm.ts` is `warm`, `wakeups.ts` is
 * where a lease waiter wakes up, `lifecycle.ts` is what `close()` waits for.
 *
 * @module
 */
import { func, getChannel, optionsObject, positiveInt, race, traced } from "../../resp/shared/mod.ts";
import type { CacheStats, Identity, Keys, Loader, Strategy } from "../types.ts";
import { getMany } from "./batch.ts";
import { type CallSettings, callSettings, checkTags } from "./call.ts";
import type {
  Cache,
  GetOptions,
  GetTraceContext,
  LoadMany,
  PipelineOptions,
  SetOptions,
  WarmOptions,
  WarmReport,
} from "./cache.ts";
import { Core } from "./core.ts";
import { Gets } from "./get.ts";
import { Lifecycle } from "./lifecycle.ts";
import { CallScope } from "./scope.ts";
import { warm } from "./warm.ts";

export type { Cache, GetOptions, PipelineOptions } from "./cache.ts";

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
  return new PipelineCache<T>(options as PipelineOptions<unknown>, strategies);
}

class PipelineCache<T> implements Cache<T> {
  readonly #core: Core;
  readonly #life = new Lifecycle();
  readonly #gets: Gets;

  constructor(options: PipelineOptions<unknown>, strategies: Strategy[]) {
    this.#core = new Core(options, strategies);
    this.#gets = new Gets(this.#core, this.#life);
  }

  keys(identity: Identity): Keys {
    return this.#core.keys(identity);
  }

  stats(): CacheStats {
    return this.#core.rec.snapshot(this.#core.local?.size ?? 0);
  }

  get(identity: Identity, loader: Loader<T>, options?: GetOptions): Promise<T> {
    // Five property reads when nobody traces; no context object is built.
    if (traced(getChannel)) return this.#traceGet(identity, loader, options);
    return this.#gets.get(identity, loader as Loader<unknown>, options) as Promise<T>;
  }

  #traceGet(identity: Identity, loader: Loader<T>, options: GetOptions | undefined): Promise<T> {
    const core = this.#core;
    let context: GetTraceContext;
    try {
      const key = core.keys(identity).data;
      context = { namespace: core.namespace, key, identity: core.traceName(identity, key) };
    } catch (error) {
      return Promise.reject(error);
    }
    return getChannel.tracePromise(
      () => this.#gets.get(identity, loader as Loader<unknown>, options) as Promise<T>,
      context,
    );
  }

  set(identity: Identity, value: T, options?: SetOptions): Promise<void> {
    return this.#life.run(async () => {
      if (value === undefined) {
        throw new TypeError("Cannot set: the value is undefined; use invalidate() to drop a value");
      }
      const o = optionsObject<SetOptions>("set", options);
      const call = callSettings("set", o, this.#core);
      const keys = this.#core.keys(identity);
      await this.#core.publisher.set(keys, value, call, identity);
      this.#core.supersede(keys.data);
      this.#core.rec.mark("set", keys.data);
    });
  }

  peek(identity: Identity): Promise<T | undefined> {
    return this.#life.run(async () => {
      const core = this.#core;
      const keys = core.keys(identity);
      const waiting = core.ready();
      if (waiting !== undefined) await waiting;
      const { entry } = await core.reader.read(keys, undefined);
      core.rec.mark("peek", keys.data);
      // Fresh, early-refresh or stale are servable; a miss (its stale-if-error
      // fallback included) is not: only a failed reload may serve that.
      return entry !== undefined && core.verdict(entry).kind !== "miss" ? (entry.value as T) : undefined;
    });
  }

  getMany(identities: readonly Identity[], loadMany: LoadMany<T>, options?: GetOptions): Promise<(T | undefined)[]> {
    return this.#life.run(async () => {
      func("getMany", "loadMany", loadMany);
      if (!Array.isArray(identities)) {
        throw new TypeError(`Cannot getMany: 'identities' must be an array, got ${typeof identities}`);
      }
      const o = optionsObject<GetOptions>("getMany", options);
      const call = callSettings("getMany", o, this.#core);
      const scope = new CallScope(`${identities.length} identities`, o.signal, call.timeoutMs);
      try {
        return (await getMany(this.#core, {
          identities,
          loadMany: loadMany as LoadMany<unknown>,
          ttlMs: call.ttlMs,
          tags: call.tags,
          signal: scope.signal,
          closing: () => this.#life.closing !== undefined,
        })) as (T | undefined)[];
      } finally {
        scope.dispose();
      }
    });
  }

  warm(identities: readonly Identity[], loader: Loader<T>, options?: WarmOptions): Promise<WarmReport> {
    return this.#life.run(() => {
      func("warm", "loader", loader);
      if (!Array.isArray(identities)) {
        throw new TypeError(`Cannot warm: 'identities' must be an array, got ${typeof identities}`);
      }
      const o = optionsObject<WarmOptions>("warm", options);
      const concurrency = positiveInt("warm", "concurrency", o.concurrency ?? 4);
      const call = callSettings("warm", o.tags === undefined ? {} : { tags: o.tags }, this.#core);
      return warm({
        identities,
        concurrency,
        signal: o.signal,
        random: this.#core.random,
        key: (identity) => this.#core.keys(identity).data,
        one: (identity) => this.#warmOne(identity, loader as Loader<unknown>, call, o.signal),
      });
    });
  }

  // Fresh (or due for a probabilistic early refresh only) is left alone;
  // missing or stale is loaded in the foreground, through the strategies.
  async #warmOne(
    identity: Identity,
    loader: Loader<unknown>,
    call: CallSettings,
    signal: AbortSignal | undefined,
  ): Promise<"loaded" | "fresh"> {
    const core = this.#core;
    const keys = core.keys(identity);
    const waiting = core.ready();
    if (waiting !== undefined) await waiting;
    const { entry } = await core.reader.read(keys, signal);
    const kind = core.verdict(entry).kind;
    if (kind === "hit" || kind === "refresh") return "fresh";
    let ran = false;
    const own: Loader<unknown> = (ctx) => {
      ran = true;
      return loader(ctx);
    };
    core.rec.mark("miss", keys.data);
    const req = this.#gets.request(keys, identity, own, call, { signal, background: false, seen: entry });
    await race(core.background.track(core.chain(req)), signal);
    return ran ? "loaded" : "fresh";
  }

  async invalidate(identity: Identity): Promise<void> {
    const core = this.#core;
    const keys = core.keys(identity);
    const options = { timeoutMs: core.commandTimeoutMs };
    // One DEL for both keys: the lease goes with the value, so an owner that
    // loaded before this point fails its token check instead of republishing.
    const deleted = core.redis.send(["DEL", keys.data, keys.lease], options);
    // Waiters on the dropped lease take over now instead of at its expiry
    // (with tracking the DEL itself wakes them; this is for subscribers).
    const announced = core.redis.send(["PUBLISH", core.channel, keys.data], options);
    await Promise.all([deleted, announced]);
    // A get of this process that starts once this resolved must not join a
    // load that began before it.
    core.supersede(keys.data);
  }

  async invalidateTags(tags: readonly string[]): Promise<void> {
    const checked = checkTags("invalidateTags", "tags", tags);
    if (checked.length === 0) return;
    await this.#core.versions.bump(checked);
    this.#core.rec.emit({ type: "invalidate-tags", tags: checked });
  }

  async clear(): Promise<void> {
    const epoch = await this.#core.versions.clear();
    // This process' near tier goes now; others' when Redis invalidates the epoch.
    const local = this.#core.local;
    if (local !== undefined && local.size > 0) {
      const count = local.size;
      local.clear();
      this.#core.rec.emit({ type: "near-invalidation", key: undefined, count });
    }
    this.#core.rec.emit({ type: "clear", epoch });
  }

  close(): Promise<void> {
    // New calls are refused from here on. Calls already running finish
    // first: one still reading starts no load or refresh now, and the loads
    // and refreshes started before are tracked, so the drain that follows
    // sees every one of them; what runs finishes and publishes.
    const closing = this.#life.close(async () => {
      await this.#core.background.drain();
      await Promise.all([...this.#core.strategies.map((s) => s.close?.()), this.#core.close()]);
    });
    this.#core.waitUntil?.(closing.then(() => {}, () => {}));
    return closing;
  }
}
