/**
 * `pipeline()`: strategies composed into a cache. A `get` reads the entry
 * (from the near tier, or one round trip), lets the read strategies judge it,
 * and on a miss runs the fill chain (first strategy outermost) down to the
 * origin load and its publication. This file is the cache's face; the rest
 * of this folder is the machinery behind it (ARCHITECTURE.md walks a hit and
 * a miss through it):
 *
 * - wiring: `core.ts` (the parts of one cache), `cache_types.ts` (the public
 *   types), `call_settings.ts` (a call's checked settings), `scope.ts` (a
 *   call's deadline), `lifecycle.ts` (what `close()` waits for), `background.ts`
 *   (loads and refreshes the cache owns);
 * - the calls: `get.ts`, `serve.ts` (a read entry judged and served),
 *   `batch.ts` (`getMany`), `warm.ts`;
 * - reading: `read.ts`, `envelope.ts` (the stored format), `keys.ts` and
 *   `key_memo.ts`,
 *   `clock.ts` (the server clock estimate), `versions.ts` (epoch and tags),
 *   `invalidations.ts` (client tracking and read markers),
 *   `invalidation_messages.ts` (the same, from published messages);
 * - filling: `chain.ts` (the fill chain), `publish.ts`, `scripts.ts` (the
 *   atomic publication);
 * - waiting: `wakeups.ts`, `pubsub_wakeups.ts`, `ticket.ts`;
 * - reporting: `stats.ts`, `prometheus.ts`.
 *
 * @module
 */
import { func, getChannel, optionsObject, positiveInt, race, traced } from "../../resp/shared/mod.ts";
import type { CacheStats, Identity, InvalidationMode, Keys, Loader, Strategy } from "../types.ts";
import { getMany } from "./batch.ts";
import { type CallSettings, callSettings, checkTags } from "./call_settings.ts";
import type {
  Cache,
  GetOptions,
  GetTraceContext,
  LoadMany,
  PipelineOptions,
  SetOptions,
  WarmOptions,
  WarmReport,
} from "./cache_types.ts";
import { Core } from "./core.ts";
import { Gets } from "./get.ts";
import { Lifecycle } from "./lifecycle.ts";
import type { CacheResult } from "./result.ts";
import { CallScope } from "./scope.ts";
import { warm } from "./warm.ts";

export type { Cache, GetOptions, PipelineOptions } from "./cache_types.ts";

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

const MODE_GAUGE: Readonly<Record<InvalidationMode, number>> = { none: 0, tracking: 1, messages: 2 };

class PipelineCache<T> implements Cache<T> {
  readonly #core: Core;
  readonly #life = new Lifecycle();
  readonly #gets: Gets;

  constructor(options: PipelineOptions<unknown>, strategies: Strategy[]) {
    this.#core = new Core(options, strategies);
    this.#gets = new Gets(this.#core, this.#life);
  }

  keys(identity: Identity): Keys {
    // A copy: the memo's own object carries its eviction bit.
    const { data, lease } = this.#core.keys(identity);
    return { data, lease };
  }

  stats(): CacheStats {
    return this.#core.rec.snapshot(this.#core.local?.size ?? 0, MODE_GAUGE[this.#core.tracker.mode]);
  }

  invalidationMode(): InvalidationMode {
    return this.#core.tracker.mode;
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

  getEntry(identity: Identity, loader: Loader<T>, options?: GetOptions): Promise<CacheResult<T>> {
    return this.#gets.getEntry(identity, loader as Loader<unknown>, options) as Promise<CacheResult<T>>;
  }

  set(identity: Identity, value: T, options?: SetOptions): Promise<void> {
    return this.#life.run("set", async () => {
      if (value === undefined) {
        throw new TypeError("Cannot set: the value is undefined; use invalidate() to drop a value");
      }
      const o = optionsObject<SetOptions>("set", options);
      const call = callSettings("set", o, this.#core);
      const keys = this.#core.keys(identity);
      await this.#core.publisher.set(keys, value, call, identity);
      this.#core.unstored.forget(keys.data);
      // A get of this process that starts from here on reads anew.
      this.#core.reader.forget(keys.data);
      this.#core.supersede(keys.data);
      this.#core.rec.mark("set", keys.data);
    });
  }

  peek(identity: Identity): Promise<T | undefined> {
    return this.#life.run("peek", async () => {
      const core = this.#core;
      const keys = core.keys(identity);
      const waiting = core.ready();
      if (waiting !== undefined) await waiting;
      const { entry } = await core.reader.shared(keys, undefined);
      core.rec.mark("peek", keys.data);
      // Fresh, early-refresh or stale are servable; a miss (its stale-if-error
      // fallback included) is not: only a failed reload may serve that.
      return entry !== undefined && core.verdict(entry).kind !== "miss" ? (entry.value as T) : undefined;
    });
  }

  getMany(identities: readonly Identity[], loadMany: LoadMany<T>, options?: GetOptions): Promise<(T | undefined)[]> {
    return this.#life.run("getMany", async () => {
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
    return this.#life.run("warm", () => {
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
        one: (identity) =>
          this.#warmOne(identity, loader as Loader<unknown>, call, o.signal ?? new AbortController().signal),
      });
    });
  }

  // Fresh (or due for a probabilistic early refresh only) is left alone;
  // missing or stale is loaded in the foreground, through the strategies.
  async #warmOne(
    identity: Identity,
    loader: Loader<unknown>,
    call: CallSettings,
    signal: AbortSignal,
  ): Promise<"loaded" | "fresh"> {
    const core = this.#core;
    const keys = core.keys(identity);
    const waiting = core.ready();
    if (waiting !== undefined) await waiting;
    const { entry } = await core.reader.shared(keys, signal);
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

  invalidate(identity: Identity): Promise<void> {
    return this.#life.run("invalidate", async () => {
      const core = this.#core;
      const keys = core.keys(identity);
      const options = { timeoutMs: core.commandTimeoutMs };
      // One DEL for both keys: the lease goes with the value, so an owner that
      // loaded before this point fails its token check instead of republishing.
      await core.redis.send(["DEL", keys.data, keys.lease], options);
      // Waiters on the dropped lease take over now instead of at its expiry
      // (with tracking the DEL itself wakes them; this is for subscribers), and
      // near tiers without tracking drop the key. After the DEL, not beside it:
      // on a cluster the two go to different nodes, and a message overtaking
      // its write would let a reader keep the old value.
      await core.redis.send(["PUBLISH", core.channel, keys.data], options);
      core.wrote([keys.data, keys.lease]);
      core.unstored.forget(keys.data);
      // A get of this process that starts once this resolved must not join a
      // read or a load that began before it.
      core.reader.forget(keys.data);
      core.supersede(keys.data);
    });
  }

  invalidateTags(tags: readonly string[]): Promise<void> {
    return this.#life.run("invalidateTags", async () => {
      const checked = checkTags("invalidateTags", "tags", tags);
      if (checked.length === 0) return;
      this.#core.wrote(await this.#core.versions.bump(checked, this.#core.channel));
      this.#core.unstored.forgetTags(checked);
      this.#core.reader.forgetAll();
      // A get of this process that starts once this resolved must not join a
      // load that began before it: that load publishes under the old version.
      this.#core.supersede();
      this.#core.rec.emit({ type: "invalidate-tags", tags: checked });
    });
  }

  clear(): Promise<void> {
    return this.#life.run("clear", async () => {
      const epoch = await this.#core.versions.clear(this.#core.channel);
      this.#core.wrote([this.#core.versions.epochKey]);
      this.#core.unstored.clear();
      this.#core.reader.forgetAll();
      this.#core.supersede();
      // This process' near tier goes now; others' when Redis invalidates the epoch.
      const local = this.#core.local;
      if (local !== undefined && local.size > 0) {
        const count = local.size;
        local.clear();
        this.#core.rec.emit({ type: "near-invalidation", key: undefined, count });
      }
      this.#core.rec.emit({ type: "clear", epoch });
    });
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
