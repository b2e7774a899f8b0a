/**
 * A `get`: the near tier first (no I/O), else one read; the read strategies
 * judge the entry; a servable one is returned (a refresh it calls for runs
 * in the background) and a miss runs the fill chain down to the origin,
 * tracked so `close()` waits for it. Three paths of decreasing speed share
 * the same judgement: a near hit answered without an await, a remote read
 * with one async frame between the caller and the client, and the general
 * path that waits for tracking and honours a call's options.
 *
 * @module
 */
import { func, optionsObject, race } from "../../resp/shared/mod.ts";
import type { Reply } from "../../resp/types.ts";
import type { Entry, FillRequest, Identity, Keys, Loader } from "../types.ts";
import { type CallSettings, callSettings, defaultCall } from "./call.ts";
import type { GetOptions } from "./cache.ts";
import { type Request, request } from "./chain.ts";
import { closedError, type Core } from "./core.ts";
import type { Lifecycle } from "./lifecycle.ts";
import { CallScope, isDeadline } from "./scope.ts";

const NO_OPTIONS: GetOptions = Object.freeze({});
const NO_HIT = Symbol("no near hit");

/** The fill request of one call, or of a background refresh. */
export interface RequestState {
  /** The caller's; undefined when nothing can abort the call (the load then gets a signal of its own). */
  readonly signal: AbortSignal | undefined;
  readonly background: boolean;
  readonly seen: Entry | undefined;
}

/** Serves the gets of one cache. */
export class Gets {
  readonly #core: Core;
  readonly #life: Lifecycle;

  constructor(core: Core, life: Lifecycle) {
    this.#core = core;
    this.#life = life;
  }

  /** One `get`, through the fastest path its call allows. */
  get(identity: Identity, loader: Loader<unknown>, options: GetOptions | undefined): Promise<unknown> {
    const core = this.#core;
    if (options === undefined && this.#life.closing === undefined && typeof loader === "function") {
      let keys: Keys;
      try {
        keys = core.keys(identity);
      } catch (error) {
        return Promise.reject(error);
      }
      // The hot path: a call without options whose entry the near tier holds
      // is answered without an await, a closure or an allocation of its own.
      if (core.local !== undefined) {
        const hit = this.#nearHit(keys, identity, loader);
        if (hit !== NO_HIT) return Promise.resolve(hit);
      }
      // The next hottest: one GET, and a hit judged in the continuation of
      // its reply, with one async frame between the caller and the client.
      // (Only while tracking is on: until then the slow path waits for it.)
      if (core.reader.direct(keys.data)) return this.#getDirect(keys, identity, loader);
    }
    return this.#getSlow(identity, loader, options);
  }

  async #getDirect(keys: Keys, identity: Identity, loader: Loader<unknown>): Promise<unknown> {
    const reader = this.#core.reader;
    const key = keys.data;
    this.#life.enter();
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
      const out = this.#serve(keys, identity, loader, defaultCall(this.#core.ttlMs), undefined, entry, false);
      // A hit's value is returned as is: an await of it would cost one more turn.
      return out instanceof Promise ? await out : out;
    } finally {
      this.#life.leave();
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
      this.refresh(keys, identity, loader, defaultCall(core.ttlMs), entry, verdict.kind === "refresh");
    }
    return entry.value;
  }

  async #getSlow(identity: Identity, loader: Loader<unknown>, options: GetOptions | undefined): Promise<unknown> {
    this.#life.enter();
    try {
      func("get", "loader", loader);
      const core = this.#core;
      const o = options === undefined ? NO_OPTIONS : optionsObject<GetOptions>("get", options);
      const call = o === NO_OPTIONS ? defaultCall(core.ttlMs) : callSettings("get", o, core);
      const keys = core.keys(identity);
      // Without a timeout the caller's own signal (or none) is all there is to obey.
      if (call.timeoutMs === undefined) return await this.#get(keys, identity, loader, call, o.signal);
      const scope = new CallScope(keys.data, o.signal, call.timeoutMs);
      try {
        return await this.#get(keys, identity, loader, call, scope.signal);
      } catch (error) {
        if (error === scope.timedOut) core.rec.emit({ type: "timeout", key: keys.data, waitedMs: call.timeoutMs });
        throw error;
      } finally {
        scope.dispose();
      }
    } finally {
      this.#life.leave();
    }
  }

  async #get(
    keys: Keys,
    identity: Identity,
    loader: Loader<unknown>,
    call: CallSettings,
    signal: AbortSignal | undefined,
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
    call: CallSettings,
    signal: AbortSignal | undefined,
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
      if (verdict.kind !== "hit" && this.#life.closing === undefined) {
        this.refresh(keys, identity, loader, call, entry, verdict.kind === "refresh");
      }
      return entry.value;
    }
    core.rec.mark("miss", key);
    const fallback = verdict.kind === "miss" ? verdict.fallback : undefined;
    return this.#fill(this.request(keys, identity, loader, call, { signal, background: false, seen: entry }), fallback);
  }

  async #fill(req: Request, fallback: Entry | undefined): Promise<unknown> {
    const core = this.#core;
    const signal = req.signal;
    try {
      // A get that read while close() was called loads nothing (stale-if-error still applies).
      if (this.#life.closing !== undefined) throw closedError();
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
      core.rec.mark("stale", req.keys.data);
      return fallback.value;
    }
  }

  /** The fill request of `identity`: the strategies' chain ends in its load and publication. */
  request(keys: Keys, identity: Identity, loader: Loader<unknown>, call: CallSettings, state: RequestState): Request {
    const core = this.#core;
    // Each load gets a signal of its own, never one shared with other loads:
    // workerd ties a signal to the request that made it, and a hit, which
    // makes no request, pays for none.
    const signal = state.signal ?? new AbortController().signal;
    const fields: FillRequest = {
      keys,
      identity,
      ttlMs: call.ttlMs,
      tags: call.tags,
      signal,
      background: state.background,
      seen: state.seen,
    };
    return request(fields, (req) => {
      const origin = async () => await loader({ signal: req.signal, identity: req.identity });
      return core.publisher.load(req, core.load, origin);
    });
  }

  /** Start a background refresh of `keys` unless one runs already. */
  refresh(
    keys: Keys,
    identity: Identity,
    loader: Loader<unknown>,
    call: CallSettings,
    seen: Entry,
    early: boolean,
  ): void {
    const core = this.#core;
    // Background refreshes belong to the cache, not to a caller: nothing aborts them.
    const run = async () => {
      const req = this.request(keys, identity, loader, call, { signal: undefined, background: true, seen });
      return (await core.chain(req)).value;
    };
    // Counted only if it starts: one already running for the key adds
    // nothing, and one over maxRefreshes is counted as dropped instead.
    core.background.refresh(keys.data, run, early ? { type: "early-refresh", key: keys.data } : undefined);
  }
}
