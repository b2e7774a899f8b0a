/**
 * A get, top to bottom. The near tier first: an entry held there is judged
 * and returned without an await or a round trip. Else one read of Redis,
 * joined by every get of the key that starts while it is in flight; the read
 * hooks judge the entry, and a servable one is returned (a refresh it calls
 * for runs in the background). A miss runs the fill chain down to the origin
 * and the publication, tracked so that `close()` waits for it and the load
 * outlives a caller who leaves. `getEntry` is the same get, reporting where
 * its value came from; `peek` and `refresh` are its relatives. A
 * `forceFresh` call leaves the read out and goes straight to the fill.
 *
 * @module
 */
import { func, getChannel, race, type RaceGroup, traced } from "../../../resp/shared/mod.ts";
import { ClosedError } from "../../errors.ts";
import type { Entry, FillRequest, Verdict } from "../../contract.ts";
import type { Identity, Keys, Loader } from "../../types.ts";
import type { Invalidations } from "../coherence/mod.ts";
import type { Composition } from "../composition.ts";
import {
  type BackgroundWork,
  chained,
  type ChainedRequest,
  type ChoiceContext,
  LoaderChoices,
  type Publisher,
} from "../fill/mod.ts";
import type { Outage, Reader, SharedKeys } from "../read/mod.ts";
import { ResultReport, type Stats } from "../report/mod.ts";
import { type CallOptions, callOptions, defaultOptions, GET_OPTIONS } from "./call_options.ts";
import { CallDeadline, isDeadline } from "./deadline.ts";
import { FALLBACK, fallbackRace } from "./fallback_timer.ts";
import type { Lifecycle } from "./lifecycle.ts";

/** What a get uses of its cache. */
export interface GetParts {
  readonly namespace: string;
  readonly ttlMs: number;
  readonly commandTimeoutMs: number;
  /** The cache's monotonic clock. */
  now(): number;
  /** The keys of an identity (remembered). */
  keys(identity: Identity): SharedKeys;
  /** The name of an identity in traces: its label, or its data key. */
  traceName(identity: Identity, key: string): string;
  readonly lifecycle: Lifecycle;
  readonly reader: Reader;
  /** True when the pipeline has a near tier. */
  readonly near: boolean;
  readonly invalidations: Invalidations;
  readonly strategies: Composition;
  readonly stats: Stats;
  readonly background: BackgroundWork;
  readonly publisher: Publisher;
  /** What a loader's choices check against. */
  readonly choices: ChoiceContext;
  /** How long a caller whose miss has a fallback waits before it gets it (swr's soft timeout), if declared. */
  readonly fallbackAfterMs: number | undefined;
  /** Whether Redis answers (`onRedisDown: "local"`); undefined: a dead Redis is an error. */
  readonly outage: Outage | undefined;
}

/** The fill request of one call, or of a background refresh. */
export interface RequestState {
  readonly signal: AbortSignal;
  readonly background: boolean;
  readonly seen: Entry | undefined;
  /** Redis cannot be reached: the load serves this process only. */
  readonly offline?: boolean;
  /** A `forceFresh` call's mark (see `FillRequest.freshAfter`). */
  readonly freshAfter?: number;
}

/** Serves the gets of one cache. */
export class Gets {
  readonly #p: GetParts;
  readonly #defaults: CallOptions;
  /** The options of calls that give a deadline alone (`{ timeoutMs }`), by value. */
  readonly #byDeadline = new Map<number, CallOptions>();

  constructor(parts: GetParts) {
    this.#p = parts;
    this.#defaults = defaultOptions(parts.ttlMs);
  }

  /** One `get`. */
  get(identity: Identity, loader: Loader<unknown>, options: unknown): Promise<unknown> {
    // Five property reads when nobody traces; no context object is built.
    if (traced(getChannel)) return this.#traced(identity, loader, options);
    return this.#get("get", identity, loader, options, undefined);
  }

  /** One `getEntry`: a get that reports where its value came from. */
  getEntry(identity: Identity, loader: Loader<unknown>, options: unknown): Promise<unknown> {
    const report = new ResultReport();
    return this.#get("getEntry", identity, loader, options, report).then((value) => report.result(value));
  }

  #get(
    method: string,
    identity: Identity,
    loader: Loader<unknown>,
    options: unknown,
    report: ResultReport | undefined,
  ): Promise<unknown> {
    const p = this.#p;
    let keys: SharedKeys;
    let call: CallOptions;
    try {
      // A closed cache, then a loader that is not a function, then the
      // identity and the options: refused in that order, before anything runs.
      p.lifecycle.check(method);
      if (typeof loader !== "function") func(method, "loader", loader);
      keys = p.keys(identity);
      call = options === undefined
        ? this.#defaults
        : callOptions(method, options, GET_OPTIONS, p.ttlMs, p.strategies.checkTtl, this.#byDeadline);
    } catch (error) {
      return Promise.reject(error);
    }
    if (call.forceFresh) return this.#forced(method, keys, identity, loader, call, report);
    // 1. The near tier: a servable entry is answered without an await (a
    // call's options cost nothing here: it never waits).
    if (p.near && p.invalidations.active) {
      const entry = p.reader.near(keys.data);
      if (entry !== undefined) {
        const verdict = p.strategies.judge(entry);
        if (verdict.kind !== "miss") {
          return Promise.resolve(this.#serve(keys, identity, loader, call, entry, verdict, true, report));
        }
      }
    }
    return this.#read(method, keys, identity, loader, call, report);
  }

  // 2. Redis: one read, shared with the gets of the key already reading,
  // then the judge. The call's deadline (its signal and timer) is built
  // only when the call waits: a miss's fill, or a read that may take more
  // than one command (tracking or the clock not ready yet) or must obey the
  // caller's signal or a timeoutMs shorter than commandTimeoutMs.
  async #read(
    method: string,
    keys: SharedKeys,
    identity: Identity,
    loader: Loader<unknown>,
    call: CallOptions,
    report: ResultReport | undefined,
  ): Promise<unknown> {
    const p = this.#p;
    const key = keys.data;
    p.lifecycle.enter(method);
    const startedAt = call.timeoutMs === undefined ? 0 : performance.now();
    let deadline: CallDeadline | undefined;
    try {
      const outage = p.outage;
      // Redis cannot be reached, and this get is not the one that probes it:
      // served from this process at once (onRedisDown "local").
      if (outage !== undefined && outage.access(key) === "skip") {
        return await this.#local(method, keys, identity, loader, call, startedAt, undefined, report);
      }
      const waiting = p.invalidations.whenReady();
      if (waiting !== undefined) await waiting;
      const bounded = call.signal === undefined &&
        (call.timeoutMs === undefined || (call.timeoutMs >= p.commandTimeoutMs && p.reader.direct(key)));
      if (!bounded) {
        deadline = new CallDeadline(key, method, call.signal, call.timeoutMs, startedAt, p.lifecycle.running);
      }
      // The near tier again (the fast path above needs tracking on), then Redis.
      const near = p.near ? p.reader.near(key) : undefined;
      let entry: Entry | undefined;
      try {
        entry = near ?? await p.reader.shared(keys, deadline?.signal);
      } catch (error) {
        if (outage === undefined || !outage.failed(key, error)) throw error;
        return await this.#local(method, keys, identity, loader, call, startedAt, undefined, report);
      }
      outage?.answered(key);
      const verdict = p.strategies.judge(entry);
      // A hit's value is returned as is: an await of it would cost one more turn.
      if (verdict.kind !== "miss") {
        return this.#serve(keys, identity, loader, call, entry!, verdict, near !== undefined, report);
      }
      // 3. A miss: the fill chain, down to the origin.
      deadline ??= new CallDeadline(key, method, call.signal, call.timeoutMs, startedAt, p.lifecycle.running);
      try {
        return await this.#fill(
          keys,
          identity,
          loader,
          call,
          deadline,
          entry,
          verdict.fallback,
          near !== undefined,
          report,
        );
      } catch (error) {
        // Redis died while this get waited for a lease or loaded: the same
        // path as a get that found it dead (the entry read, if any, first).
        if (outage === undefined || !outage.failed(key, error)) throw error;
        return await this.#local(method, keys, identity, loader, call, startedAt, entry, report);
      }
    } catch (error) {
      if (deadline !== undefined && error === deadline.timedOut) {
        p.stats.emit({ type: "timeout", key, waitedMs: call.timeoutMs! });
      }
      throw error;
    } finally {
      deadline?.dispose();
      p.lifecycle.leave();
    }
  }

  // 2'. Redis cannot be reached (onRedisDown "local"): the get is served
  // from this process and nothing is stored. What it holds for the key (the
  // entry just read, a near entry kept through the outage, a value it loaded
  // and could not store) while that is inside its windows, counted stale;
  // else one load per identity in this process (coalesce() shares it, limit()
  // bounds it, lease() steps aside), kept for its windows.
  async #local(
    method: string,
    keys: SharedKeys,
    identity: Identity,
    loader: Loader<unknown>,
    call: CallOptions,
    startedAt: number,
    seen: Entry | undefined,
    report: ResultReport | undefined,
  ): Promise<unknown> {
    const p = this.#p;
    const key = keys.data;
    const held = seen !== undefined && seen.pttl > 0 ? { entry: seen, near: false } : p.reader.local(key);
    p.stats.emit({ type: "degraded", key, error: p.outage!.reason(key) });
    if (held !== undefined) {
      p.stats.served(key, true, held.near);
      report?.served(held.entry, held.near, true);
      if (report !== undefined) report.degraded = "redis-down";
      return held.entry.value;
    }
    if (p.lifecycle.ended) throw new ClosedError(method);
    p.stats.mark("miss", key);
    const deadline = new CallDeadline(key, method, call.signal, call.timeoutMs, startedAt, p.lifecycle.running);
    try {
      const signal = deadline.signal;
      const fill = p.strategies.fill(
        this.request(keys, identity, loader, call, { signal, background: false, seen: undefined, offline: true }),
      );
      const outcome = await race(p.background.track(fill), signal);
      report?.filled(outcome);
      return outcome.value;
    } finally {
      deadline.dispose();
    }
  }

  // forceFresh: no entry is read or served; the fill runs with the mark a
  // value published by another owner must have begun loading after.
  async #forced(
    method: string,
    keys: SharedKeys,
    identity: Identity,
    loader: Loader<unknown>,
    call: CallOptions,
    report: ResultReport | undefined,
  ): Promise<unknown> {
    const p = this.#p;
    const key = keys.data;
    p.lifecycle.enter(method);
    const deadline = new CallDeadline(key, method, call.signal, call.timeoutMs, performance.now(), p.lifecycle.running);
    try {
      const waiting = p.invalidations.whenReady();
      if (waiting !== undefined) await waiting;
      const freshAfter = await p.reader.latestNow(key, deadline.signal);
      return await this.#fill(keys, identity, loader, call, deadline, undefined, undefined, false, report, freshAfter);
    } catch (error) {
      if (error === deadline.timedOut) p.stats.emit({ type: "timeout", key, waitedMs: call.timeoutMs! });
      throw error;
    } finally {
      deadline.dispose();
      p.lifecycle.leave();
    }
  }

  // A servable entry: counted, it supersedes the loads running for its key,
  // and a refresh it calls for starts in the background.
  #serve(
    keys: Keys,
    identity: Identity,
    loader: Loader<unknown>,
    call: CallOptions,
    entry: Entry,
    verdict: Verdict,
    near: boolean,
    report: ResultReport | undefined,
  ): unknown {
    const p = this.#p;
    const stale = verdict.kind === "stale";
    countServed(p, keys.data, stale, near);
    report?.served(entry, near, stale);
    // A cache that is closing starts no refresh: close() may be about to resolve.
    if (verdict.kind !== "hit" && !p.lifecycle.closing) {
      this.refresh(keys, identity, loader, call, entry, verdict.kind === "refresh");
    }
    return entry.value;
  }

  async #fill(
    keys: Keys,
    identity: Identity,
    loader: Loader<unknown>,
    call: CallOptions,
    deadline: CallDeadline,
    seen: Entry | undefined,
    fallback: Entry | undefined,
    near: boolean,
    report: ResultReport | undefined,
    freshAfter?: number,
  ): Promise<unknown> {
    const p = this.#p;
    const key = keys.data;
    // A close() ran out of time while this get was reading: it loads nothing.
    if (p.lifecycle.ended) throw new ClosedError(report === undefined ? "get" : "getEntry");
    p.stats.mark("miss", key);
    const signal = deadline.signal;
    try {
      // A caller gone during the read must not start a load nobody waits for.
      if (signal.aborted) throw signal.reason;
      // The fill outlives a caller who leaves: an owner keeps loading and
      // publishing for the others, tracked so close() waits for it.
      const state: RequestState = freshAfter === undefined
        ? { signal, background: false, seen }
        : { signal, background: false, seen, freshAfter };
      const fill = p.background.track(p.strategies.fill(this.request(keys, identity, loader, call, state)));
      const after = fallback === undefined ? undefined : p.fallbackAfterMs;
      const outcome = await race(after === undefined ? fill : fallbackRace(fill, after), signal);
      if (outcome === FALLBACK) {
        // The old value now; the load goes on, tracked, and publishes.
        p.stats.emit({ type: "soft-timeout", key });
        p.stats.mark("stale", key);
        report?.served(fallback!, near, true);
        return fallback!.value;
      }
      report?.filled(outcome);
      return outcome.value;
    } catch (error) {
      // A caller who cancelled wants no answer; a caller whose deadline ran
      // out (timeoutMs, AbortSignal.timeout) still prefers stale to nothing.
      if (fallback === undefined || (signal.aborted && !isDeadline(signal.reason))) throw error;
      // Stale-if-error: the old value beats the failure while its window lasts.
      p.stats.mark("stale", key);
      report?.served(fallback, near, true);
      return fallback.value;
    }
  }

  /** The fill request of `identity`: the strategies' chain ends in its load and publication. */
  request(
    keys: Keys,
    identity: Identity,
    loader: Loader<unknown>,
    call: Pick<CallOptions, "ttlMs" | "tags">,
    state: RequestState,
  ): ChainedRequest {
    const p = this.#p;
    const fields: FillRequest = { keys, identity, ttlMs: call.ttlMs, tags: call.tags, ...state };
    return chained(fields, (req) => {
      const choices = new LoaderChoices(p.choices, [req.seen], req.offline === true);
      const origin = async () => {
        try {
          return await loader(choices.loaderContext(req.signal, req.identity));
        } finally {
          choices.settle();
        }
      };
      return p.publisher.loadAndPublish(req, p.strategies.load, origin, choices.items[0]);
    });
  }

  /** Start a background refresh of `keys` unless one runs already. */
  refresh(
    keys: Keys,
    identity: Identity,
    loader: Loader<unknown>,
    call: Pick<CallOptions, "ttlMs" | "tags">,
    seen: Entry,
    early: boolean,
  ): void {
    const p = this.#p;
    // Background refreshes belong to the cache, not to a caller: only a
    // close() whose time ran out aborts them.
    const run = async () => {
      const deadline = new CallDeadline(keys.data, "refresh", undefined, undefined, 0, p.lifecycle.running);
      try {
        const req = this.request(keys, identity, loader, call, { signal: deadline.signal, background: true, seen });
        return (await p.strategies.fill(req)).value;
      } finally {
        deadline.dispose();
      }
    };
    // Counted only if it starts: one already running for the key adds
    // nothing, and one over maxRefreshes is counted as dropped instead.
    p.background.refresh(keys.data, run, early);
  }

  /**
   * The value of `identity` if one is servable now (fresh, early refresh or
   * stale), else `undefined`; never loads. A miss's stale-if-error fallback
   * is not servable: only a failed reload may serve that.
   */
  async peek(identity: Identity): Promise<unknown> {
    const p = this.#p;
    const keys = p.keys(identity);
    const key = keys.data;
    const outage = p.outage;
    // Redis cannot be reached (onRedisDown "local"): what this process holds, if anything.
    if (outage !== undefined && outage.access(key) === "skip") return p.reader.local(key)?.entry.value;
    const waiting = p.invalidations.whenReady();
    if (waiting !== undefined) await waiting;
    let entry: Entry | undefined;
    try {
      entry = (p.near ? p.reader.near(key) : undefined) ?? await p.reader.shared(keys, undefined);
    } catch (error) {
      if (outage === undefined || !outage.failed(key, error)) throw error;
      return p.reader.local(key)?.entry.value;
    }
    outage?.answered(key);
    p.stats.mark("peek", keys.data);
    return entry !== undefined && p.strategies.judge(entry).kind !== "miss" ? entry.value : undefined;
  }

  /**
   * `warm`'s step for one identity: fresh (or due for an early refresh
   * only) is left alone; missing or stale is loaded in the foreground,
   * through the strategies. `loaded` when this call's loader ran. Its waits
   * race the warm's signal through `group` (one listener for the whole warm).
   */
  async warmOne(
    identity: Identity,
    loader: Loader<unknown>,
    call: Pick<CallOptions, "ttlMs" | "tags">,
    signal: AbortSignal,
    group: RaceGroup,
  ): Promise<"loaded" | "fresh"> {
    const p = this.#p;
    const keys = p.keys(identity);
    const waiting = p.invalidations.whenReady();
    if (waiting !== undefined) await waiting;
    const entry = (p.near ? p.reader.near(keys.data) : undefined) ?? await group.race(p.reader.shared(keys, undefined));
    const kind = p.strategies.judge(entry).kind;
    if (kind === "hit" || kind === "refresh") return "fresh";
    if (p.lifecycle.ended) throw new ClosedError("warm");
    let ran = false;
    const own: Loader<unknown> = (ctx) => {
      ran = true;
      return loader(ctx);
    };
    p.stats.mark("miss", keys.data);
    const req = this.request(keys, identity, own, call, { signal, background: false, seen: entry });
    await group.race(p.background.track(p.strategies.fill(req)));
    return ran ? "loaded" : "fresh";
  }

  #traced(identity: Identity, loader: Loader<unknown>, options: unknown): Promise<unknown> {
    const p = this.#p;
    let context;
    try {
      const key = p.keys(identity).data;
      context = { namespace: p.namespace, key, identity: p.traceName(identity, key) };
    } catch (error) {
      return Promise.reject(error);
    }
    return getChannel.tracePromise(() => this.#get("get", identity, loader, options, undefined), context);
  }
}

/**
 * Count a servable entry of `key` as served; it supersedes the loads
 * running for its key: a caller from now on must not join a load older than
 * what was served. Only while the cache runs a fill can a strategy hold one.
 */
export function countServed(
  p: Pick<GetParts, "stats" | "strategies" | "background">,
  key: string,
  stale: boolean,
  near: boolean,
): void {
  p.stats.served(key, stale, near);
  if (p.strategies.superseding && p.background.busy) p.strategies.superseded(key);
}
