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
import type { Entry, FillRequest, Identity, Keys, Loader } from "../types.ts";
import { ClosedError } from "../errors.ts";
import { type CallSettings, callSettings, defaultCall } from "./call_settings.ts";
import type { GetOptions } from "./cache_types.ts";
import { chained, type ChainedRequest } from "./chain.ts";
import type { Core } from "./core.ts";
import type { Lifecycle } from "./lifecycle.ts";
import { Choices } from "./loader_context.ts";
import { type CacheResult, Report } from "./result.ts";
import { CallScope, isDeadline } from "./scope.ts";
import { judge } from "./serve.ts";
import { SOFT, softRace, softTimeoutOf } from "./soft_timeout.ts";

const NO_HIT = Symbol("no near hit");

/** The fill request of one call, or of a background refresh. */
export interface RequestState {
  readonly signal: AbortSignal;
  readonly background: boolean;
  readonly seen: Entry | undefined;
}

/** Serves the gets of one cache. */
export class Gets {
  readonly #core: Core;
  readonly #life: Lifecycle;
  /** swr's softTimeoutMs, if any: how long a caller with a fallback waits for its load. */
  readonly #softMs: number | undefined;

  constructor(core: Core, life: Lifecycle) {
    this.#core = core;
    this.#life = life;
    this.#softMs = softTimeoutOf(core.strategies);
  }

  /** One `get`, through the fastest path its call allows. */
  get(identity: Identity, loader: Loader<unknown>, options: GetOptions | undefined): Promise<unknown> {
    // A closed cache or a loader that is not a function: refused, in that order.
    if (this.#life.closing !== undefined || typeof loader !== "function") return this.#refuse("get", loader);
    const core = this.#core;
    let keys: Keys;
    let call: CallSettings;
    let signal: AbortSignal | undefined;
    try {
      // Derived once per call, whatever path it takes (remembered across calls by the key memo).
      keys = core.keys(identity);
      if (options === undefined) call = defaultCall(core.ttlMs);
      else {
        const o = optionsObject<GetOptions>("get", options);
        call = callSettings("get", o, core);
        signal = o.signal;
      }
    } catch (error) {
      return Promise.reject(error);
    }
    // The hot path: an entry the near tier holds is answered without an
    // await or a closure; per-call options cost nothing here (no signal, no
    // timer: the call never waits).
    if (core.local !== undefined) {
      const hit = this.#nearHit(keys, identity, loader, call);
      if (hit !== NO_HIT) return Promise.resolve(hit);
    }
    return this.#getRead(keys, identity, loader, call, signal);
  }

  /**
   * One `getEntry`: `get`'s read, judgement and fill (the near tier is read
   * by the shared read), gathering a report on its way; `get` passes none.
   */
  getEntry(
    identity: Identity,
    loader: Loader<unknown>,
    options: GetOptions | undefined,
  ): Promise<CacheResult<unknown>> {
    if (this.#life.closing !== undefined || typeof loader !== "function") return this.#refuse("getEntry", loader);
    const core = this.#core;
    let keys: Keys;
    let call: CallSettings;
    let signal: AbortSignal | undefined;
    try {
      keys = core.keys(identity);
      if (options === undefined) call = defaultCall(core.ttlMs);
      else {
        const o = optionsObject<GetOptions>("getEntry", options);
        call = callSettings("getEntry", o, core);
        signal = o.signal;
      }
    } catch (error) {
      return Promise.reject(error);
    }
    const report = new Report();
    return this.#getRead(keys, identity, loader, call, signal, report).then((value) => report.result(value));
  }

  #refuse(method: string, loader: Loader<unknown>): Promise<never> {
    try {
      this.#life.enter(method);
      this.#life.leave();
      func(method, "loader", loader);
    } catch (error) {
      return Promise.reject(error);
    }
    return Promise.reject(new ClosedError(method));
  }

  // One read of Redis (shared with the gets of the key already reading),
  // then judge and serve. The call's signal, and so its timer, is built
  // only when the call waits: a miss's load, or a read that may take more
  // than one command (tracking or the clock not ready yet) or must obey the
  // caller's signal or a timeoutMs shorter than commandTimeoutMs. A hit
  // judged in the continuation of its reply pays one async frame between the
  // caller and the client, and no await of tracking when it is on.
  async #getRead(
    keys: Keys,
    identity: Identity,
    loader: Loader<unknown>,
    call: CallSettings,
    signal: AbortSignal | undefined,
    report?: Report,
  ): Promise<unknown> {
    const core = this.#core;
    const key = keys.data;
    this.#life.enter("get");
    const timeoutMs = call.timeoutMs;
    const scope = timeoutMs === undefined && signal === undefined ? undefined : new CallScope(key, signal, timeoutMs);
    try {
      const waiting = core.ready();
      if (waiting !== undefined) await waiting;
      const read = await core.reader.shared(
        keys,
        scope === undefined || this.#bounded(key, call, signal) ? undefined : scope.signal,
      );
      const out = this.#serve(keys, identity, loader, call, scope, read.entry, read.near, report);
      // A hit's value is returned as is: an await of it would cost one more turn.
      return out instanceof Promise ? await out : out;
    } catch (error) {
      if (scope !== undefined && error === scope.timedOut) this.#timedOut(key, call);
      throw error;
    } finally {
      scope?.dispose();
      this.#life.leave();
    }
  }

  // Whether the read of `key` is one command that commandTimeoutMs bounds
  // within the call's own deadline, so the call needs no signal for it.
  #bounded(key: string, call: CallSettings, signal: AbortSignal | undefined): boolean {
    const timeoutMs = call.timeoutMs;
    return signal === undefined && (timeoutMs === undefined || timeoutMs >= this.#core.commandTimeoutMs) &&
      this.#core.reader.direct(key);
  }

  #timedOut(key: string, call: CallSettings): void {
    this.#core.rec.emit({ type: "timeout", key, waitedMs: call.timeoutMs! });
  }

  // A judged near entry that needs no load: its value (a refresh it calls
  // for starts in the background), or NO_HIT to take the general path.
  #nearHit(keys: Keys, identity: Identity, loader: Loader<unknown>, call: CallSettings): unknown {
    const core = this.#core;
    // Tracking down (or not yet on): the slow path waits for it or retries it.
    if (!core.tracker.active) return NO_HIT;
    const entry = core.reader.near(keys.data);
    if (entry === undefined) return NO_HIT;
    const verdict = judge(core, keys.data, entry, true);
    if (verdict.kind === "miss") return NO_HIT;
    if (verdict.kind !== "hit") this.refresh(keys, identity, loader, call, entry, verdict.kind === "refresh");
    return entry.value;
  }

  // A read entry judged: its value when servable (a refresh it calls for
  // starts in the background), else the fill's promise (the call's signal,
  // and so its timer, start only then).
  #serve(
    keys: Keys,
    identity: Identity,
    loader: Loader<unknown>,
    call: CallSettings,
    scope: CallScope | undefined,
    entry: Entry | undefined,
    near: boolean,
    report: Report | undefined,
  ): unknown {
    const core = this.#core;
    const key = keys.data;
    const verdict = judge(core, key, entry, near);
    if (verdict.kind !== "miss") {
      report?.served(entry!, near, verdict.kind === "stale");
      // A cache that is closing starts no refresh: close() may be about to resolve.
      if (verdict.kind !== "hit" && this.#life.closing === undefined) {
        this.refresh(keys, identity, loader, call, entry!, verdict.kind === "refresh");
      }
      return entry!.value;
    }
    core.rec.mark("miss", key);
    const fallback = verdict.fallback;
    // Each load gets a signal of its own, never one shared with other loads (workerd ties one to its request).
    const signal = scope === undefined ? new AbortController().signal : scope.signal;
    const req = this.request(keys, identity, loader, call, { signal, background: false, seen: entry });
    return this.#fill(req, fallback, near, report);
  }

  async #fill(
    req: ChainedRequest,
    fallback: Entry | undefined,
    near: boolean,
    report: Report | undefined,
  ): Promise<unknown> {
    const core = this.#core;
    const signal = req.signal;
    try {
      // A get that read while close() was called loads nothing (stale-if-error still applies).
      if (this.#life.closing !== undefined) throw new ClosedError(report === undefined ? "get" : "getEntry");
      // A caller gone during the read must not start a load nobody waits for.
      if (signal.aborted) throw signal.reason;
      // The fill outlives a caller who leaves: an owner keeps loading and
      // publishing for the others, tracked so close() waits for it.
      const fill = core.background.track(core.chain(req));
      const soft = fallback === undefined ? undefined : this.#softMs;
      const outcome = await race(soft === undefined ? fill : softRace(fill, soft), signal);
      if (outcome === SOFT) {
        // The old value now; the load goes on, tracked, and publishes.
        core.rec.emit({ type: "soft-timeout", key: req.keys.data });
        core.rec.mark("stale", req.keys.data);
        report?.served(fallback!, near, true);
        return fallback!.value;
      }
      report?.filled(outcome);
      return outcome.value;
    } catch (error) {
      // A caller who cancelled wants no answer; a caller whose deadline ran
      // out (timeoutMs, AbortSignal.timeout) still prefers stale to nothing.
      const cancelled = signal.aborted && !isDeadline(signal.reason);
      if (fallback === undefined || cancelled) throw error;
      // Stale-if-error: the old value beats the failure while its window lasts.
      core.rec.mark("stale", req.keys.data);
      report?.served(fallback, near, true);
      return fallback.value;
    }
  }

  /** The fill request of `identity`: the strategies' chain ends in its load and publication. */
  request(
    keys: Keys,
    identity: Identity,
    loader: Loader<unknown>,
    call: CallSettings,
    state: RequestState,
  ): ChainedRequest {
    const core = this.#core;
    const fields: FillRequest = { keys, identity, ttlMs: call.ttlMs, tags: call.tags, ...state };
    return chained(fields, (req) => {
      const choices = new Choices(core, 1);
      const origin = async () => {
        try {
          return await loader(choices.loaderContext(req.signal, req.identity));
        } finally {
          choices.settle();
        }
      };
      return core.publisher.loadAndPublish(req, core.load, origin, choices.items[0]);
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
      const req = this.request(keys, identity, loader, call, {
        signal: new AbortController().signal,
        background: true,
        seen,
      });
      return (await core.chain(req)).value;
    };
    // Counted only if it starts: one already running for the key adds
    // nothing, and one over maxRefreshes is counted as dropped instead.
    core.background.refresh(keys.data, run, early);
  }
}
