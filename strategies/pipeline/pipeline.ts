/**
 * `pipeline()`: strategies composed into a cache. A `get` reads the entry
 * (from the near tier, or one round trip), lets the read strategies judge it,
 * and on a miss runs the fill chain (first strategy outermost) down to the
 * origin load and its publication. The rest of this folder is the machinery
 * behind it: `core.ts` wires the parts, `read.ts` reads an entry,
 * `publish.ts` loads and publishes, `batch.ts` is `getMany`, `warm.ts` is
 * `warm`, `wakeups.ts` is where a lease waiter wakes up.
 *
 * @module
 */
import { NEVER, race } from "../../resp/_abort.ts";
import { func, optionsObject, positiveInt } from "../../resp/_validate.ts";
import type { Reply } from "../../resp/types.ts";
import type { CacheStats, Entry, FillRequest, Identity, Keys, Loader, Strategy } from "../types.ts";
import { getChannel, traced } from "../../resp/_tracing.ts";
import { getMany } from "./batch.ts";
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
import { request } from "./chain.ts";
import { closedError, Core } from "./core.ts";
import { CallScope, isDeadline } from "./scope.ts";
import { warm } from "./warm.ts";

export type { Cache, GetOptions, PipelineOptions } from "./cache.ts";

const NO_TAGS: readonly string[] = Object.freeze([]);
const NO_OPTIONS: GetOptions = Object.freeze({});
const NO_HIT = Symbol("no near hit");
const defaultCalls = new Map<number, { timeoutMs: undefined; ttlMs: number; tags: readonly string[] }>();

// The call options of a call that gave none, one frozen object per TTL.
function DEFAULT_CALL(ttlMs: number) {
  let call = defaultCalls.get(ttlMs);
  if (call === undefined) defaultCalls.set(ttlMs, call = Object.freeze({ timeoutMs: undefined, ttlMs, tags: NO_TAGS }));
  return call;
}

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
  #closing: Promise<void> | undefined;
  /** Calls between their entry and their return; close() waits for them. */
  #active = 0;
  #idle: (() => void) | undefined;

  constructor(options: PipelineOptions<unknown>, strategies: Strategy[]) {
    this.#core = new Core(options, strategies);
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
    return this.#untracedGet(identity, loader, options);
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
    return getChannel.tracePromise(() => this.#untracedGet(identity, loader, options), context);
  }

  #untracedGet(identity: Identity, loader: Loader<T>, options: GetOptions | undefined): Promise<T> {
    const core = this.#core;
    if (options === undefined && this.#closing === undefined && typeof loader === "function") {
      let keys: Keys;
      try {
        keys = core.keys(identity);
      } catch (error) {
        return Promise.reject(error);
      }
      // The hot path: a call without options whose entry the near tier holds
      // is answered without an await, a closure or an allocation of its own.
      if (core.local !== undefined) {
        const hit = this.#nearHit(keys, identity, loader as Loader<unknown>);
        if (hit !== NO_HIT) return Promise.resolve(hit as T);
      }
      // The next hottest: one GET, and a hit judged in the continuation of
      // its reply, with one async frame between the caller and the client.
      // (Only while tracking is on: until then the slow path waits for it.)
      if (core.reader.direct(keys.data)) {
        return this.#getDirect(keys, identity, loader as Loader<unknown>) as Promise<T>;
      }
    }
    return this.#getSlow(identity, loader, options);
  }

  async #getDirect(keys: Keys, identity: Identity, loader: Loader<unknown>): Promise<unknown> {
    const reader = this.#core.reader;
    const key = keys.data;
    this.#active++;
    try {
      const marker = reader.begin(key);
      let raw: Reply | undefined;
      try {
        raw = await reader.fetch(key);
      } catch (error) {
        raw = reader.failed(key, marker, error);
      }
      const settled = raw === undefined ? undefined : reader.settle(key, raw, marker);
      const entry = settled instanceof Promise ? await settled : settled;
      const out = this.#serve(keys, identity, loader, DEFAULT_CALL(this.#core.ttlMs), NEVER, entry, false);
      // A hit's value is returned as is: an await of it would cost one more turn.
      return out instanceof Promise ? await out : out;
    } finally {
      if (--this.#active === 0) this.#idle?.();
    }
  }

  // A judged near entry that needs no load: its value (a refresh it calls
  // for starts in the background), or NO_HIT to take the general path.
  #nearHit(keys: Keys, identity: Identity, loader: Loader<unknown>): unknown {
    const core = this.#core;
    // Tracking down (or not yet on): the slow path waits for it or retries it.
    if (!core.tracker.active) return NO_HIT;
    const entry = core.reader.near(keys.data);
    if (entry === undefined) return NO_HIT;
    const verdict = core.verdict(entry);
    if (verdict.kind === "miss") return NO_HIT;
    const key = keys.data;
    core.rec.served(key, verdict.kind === "stale", true);
    core.supersede(key);
    if (verdict.kind !== "hit") {
      this.#refresh(keys, identity, loader, DEFAULT_CALL(core.ttlMs), entry, verdict.kind === "refresh");
    }
    return entry.value;
  }

  async #getSlow(identity: Identity, loader: Loader<T>, options: GetOptions | undefined): Promise<T> {
    if (this.#closing !== undefined) throw closedError();
    this.#active++;
    try {
      func("get", "loader", loader);
      const o = options === undefined ? NO_OPTIONS : optionsObject<GetOptions>("get", options);
      const call = o === NO_OPTIONS ? DEFAULT_CALL(this.#core.ttlMs) : this.#callOptions("get", o);
      const keys = this.#core.keys(identity);
      // Without a timeout the caller's own signal (or none) is all there is to obey.
      if (call.timeoutMs === undefined) {
        return (await this.#get(keys, identity, loader as Loader<unknown>, call, o.signal ?? NEVER)) as T;
      }
      const scope = new CallScope(keys.data, o.signal, call.timeoutMs);
      try {
        return (await this.#get(keys, identity, loader as Loader<unknown>, call, scope.signal)) as T;
      } catch (error) {
        if (error === scope.timedOut) {
          this.#core.rec.emit({ type: "timeout", key: keys.data, waitedMs: call.timeoutMs });
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
    call: { ttlMs: number; tags: readonly string[] },
    signal: AbortSignal,
  ): Promise<unknown> {
    const core = this.#core;
    const waiting = core.ready();
    if (waiting !== undefined) await waiting;
    const read = await core.reader.read(keys, signal);
    const out = this.#serve(keys, identity, loader, call, signal, read.entry, read.near);
    return out instanceof Promise ? await out : out;
  }

  // A read entry judged: its value when servable (a refresh it calls for
  // starts in the background), else the fill's promise.
  #serve(
    keys: Keys,
    identity: Identity,
    loader: Loader<unknown>,
    call: { ttlMs: number; tags: readonly string[] },
    signal: AbortSignal,
    entry: Entry | undefined,
    near: boolean,
  ): unknown {
    const core = this.#core;
    const key = keys.data;
    const verdict = core.verdict(entry);
    if (verdict.kind !== "miss" && entry !== undefined) {
      core.rec.served(key, verdict.kind === "stale", near);
      core.supersede(key);
      // A cache that is closing starts no refresh: close() may be about to resolve.
      if (verdict.kind !== "hit" && this.#closing === undefined) {
        this.#refresh(keys, identity, loader, call, entry, verdict.kind === "refresh");
      }
      return entry.value;
    }
    core.rec.mark("miss", key);
    return this.#fill(
      keys,
      identity,
      loader,
      call,
      signal,
      entry,
      verdict.kind === "miss" ? verdict.fallback : undefined,
    );
  }

  async #fill(
    keys: Keys,
    identity: Identity,
    loader: Loader<unknown>,
    call: { ttlMs: number; tags: readonly string[] },
    signal: AbortSignal,
    entry: Entry | undefined,
    fallback: Entry | undefined,
  ): Promise<unknown> {
    const core = this.#core;
    const key = keys.data;
    const req = this.#request(keys, identity, loader, call, { signal, background: false, seen: entry });
    try {
      // A get that read while close() was called loads nothing (stale-if-error still applies).
      if (this.#closing !== undefined) throw closedError();
      // A caller gone during the read must not start a load nobody waits for.
      if (signal.aborted) throw signal.reason;
      // The fill outlives a caller who leaves: an owner keeps loading and
      // publishing for the others, tracked so close() waits for it.
      return (await race(core.background.track(core.chain(req)), signal)).value;
    } catch (error) {
      // A caller who cancelled wants no answer; a caller whose deadline ran
      // out (timeoutMs, AbortSignal.timeout) still prefers stale to nothing.
      const cancelled = signal.aborted && !isDeadline(signal.reason);
      if (fallback === undefined || cancelled) throw error;
      // Stale-if-error: the old value beats the failure while its window lasts.
      core.rec.mark("stale", key);
      return fallback.value;
    }
  }

  #request(
    keys: Keys,
    identity: Identity,
    loader: Loader<unknown>,
    call: { ttlMs: number; tags: readonly string[] },
    state: { signal: AbortSignal; background: boolean; seen: Entry | undefined },
  ) {
    const core = this.#core;
    const fields: FillRequest = { keys, identity, ttlMs: call.ttlMs, tags: call.tags, ...state };
    return request(fields, (req) => {
      const origin = async () => await loader({ signal: req.signal, identity: req.identity });
      return core.publisher.load(req, core.load, origin);
    });
  }

  #refresh(
    keys: Keys,
    identity: Identity,
    loader: Loader<unknown>,
    call: { ttlMs: number; tags: readonly string[] },
    seen: Entry,
    early: boolean,
  ): void {
    const core = this.#core;
    // Background refreshes belong to the cache, not to a caller: nothing aborts them.
    const run = async () => {
      const req = this.#request(keys, identity, loader, call, { signal: NEVER, background: true, seen });
      return (await core.chain(req)).value;
    };
    // Counted only if it starts: one already running for the key adds
    // nothing, and one over maxRefreshes is counted as dropped instead.
    core.background.refresh(keys.data, run, early ? { type: "early-refresh", key: keys.data } : undefined);
  }

  set(identity: Identity, value: T, options?: SetOptions): Promise<void> {
    return this.#run(async () => {
      if (value === undefined) {
        throw new TypeError("Cannot set: the value is undefined; use invalidate() to drop a value");
      }
      const o = optionsObject<SetOptions>("set", options);
      const call = this.#callOptions("set", o);
      const keys = this.#core.keys(identity);
      await this.#core.publisher.set(keys, value, call, identity);
      this.#core.supersede(keys.data);
      this.#core.rec.mark("set", keys.data);
    });
  }

  peek(identity: Identity): Promise<T | undefined> {
    return this.#run(async () => {
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
    return this.#run(async () => {
      func("getMany", "loadMany", loadMany);
      if (!Array.isArray(identities)) {
        throw new TypeError(`Cannot getMany: 'identities' must be an array, got ${typeof identities}`);
      }
      const o = optionsObject<GetOptions>("getMany", options);
      const call = this.#callOptions("getMany", o);
      const scope = new CallScope(`${identities.length} identities`, o.signal, call.timeoutMs);
      try {
        return (await getMany(this.#core, {
          identities,
          loadMany: loadMany as LoadMany<unknown>,
          ttlMs: call.ttlMs,
          tags: call.tags,
          signal: scope.signal,
          closing: () => this.#closing !== undefined,
        })) as (T | undefined)[];
      } finally {
        scope.dispose();
      }
    });
  }

  warm(identities: readonly Identity[], loader: Loader<T>, options?: WarmOptions): Promise<WarmReport> {
    return this.#run(() => {
      func("warm", "loader", loader);
      if (!Array.isArray(identities)) {
        throw new TypeError(`Cannot warm: 'identities' must be an array, got ${typeof identities}`);
      }
      const o = optionsObject<WarmOptions>("warm", options);
      const concurrency = positiveInt("warm", "concurrency", o.concurrency ?? 4);
      const call = this.#callOptions("warm", o.tags === undefined ? {} : { tags: o.tags });
      return warm({
        identities,
        concurrency,
        signal: o.signal,
        random: this.#core.random,
        key: (identity) => this.#core.keys(identity).data,
        one: (identity) => this.#warmOne(identity, loader as Loader<unknown>, call, o.signal ?? NEVER),
      });
    });
  }

  // Fresh (or due for a probabilistic early refresh only) is left alone;
  // missing or stale is loaded in the foreground, through the strategies.
  async #warmOne(
    identity: Identity,
    loader: Loader<unknown>,
    call: { ttlMs: number; tags: readonly string[] },
    signal: AbortSignal,
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
    const req = this.#request(keys, identity, own, call, { signal, background: false, seen: entry });
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
    this.#closing ??= (async () => {
      // New calls are refused from here on. Calls already running finish
      // first: one still reading starts no load or refresh now, and the
      // loads and refreshes started before are tracked, so the drain that
      // follows sees every one of them; what runs finishes and publishes.
      if (this.#active > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
      await this.#core.background.drain();
      await Promise.all([...this.#core.strategies.map((s) => s.close?.()), this.#core.close()]);
    })();
    return this.#closing;
  }

  // Counted from its entry, not from its fill: close() must also wait for a
  // call still reading, or it would load or refresh after close() resolved.
  async #run<R>(body: () => Promise<R>): Promise<R> {
    if (this.#closing !== undefined) throw closedError();
    this.#active++;
    try {
      return await body();
    } finally {
      if (--this.#active === 0) this.#idle?.();
    }
  }

  #callOptions(where: string, o: { timeoutMs?: number; ttlMs?: number; tags?: readonly string[] }) {
    const timeoutMs = o.timeoutMs === undefined ? undefined : positiveInt(where, "timeoutMs", o.timeoutMs);
    let ttlMs = this.#core.ttlMs;
    if (o.ttlMs !== undefined) {
      ttlMs = positiveInt(where, "ttlMs", o.ttlMs);
      for (const s of this.#core.strategies) s.checkTtl?.(ttlMs);
    }
    const tags = o.tags === undefined ? NO_TAGS : checkTags(where, "tags", o.tags);
    return { timeoutMs, ttlMs, tags };
  }
}

/** Throws unless `tags` is an array of non-empty strings; returns them without duplicates. */
function checkTags(where: string, name: string, tags: unknown): readonly string[] {
  if (!Array.isArray(tags)) {
    throw new TypeError(`Cannot ${where}: '${name}' must be an array of strings, got ${typeof tags}`);
  }
  for (let i = 0; i < tags.length; i++) {
    if (typeof tags[i] !== "string" || tags[i].length === 0) {
      throw new TypeError(
        `Cannot ${where}: '${name}[${i}]' must be a non-empty string, got ${JSON.stringify(tags[i])}`,
      );
    }
  }
  return tags.length <= 1 ? tags : [...new Set(tags as string[])];
}
