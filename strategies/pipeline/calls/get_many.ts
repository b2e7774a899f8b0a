/**
 * `getMany`: one read round trip for every identity, then one origin call
 * for every miss this process may load.
 *
 * Each missing identity still goes through the fill chain on its own, so
 * `coalesce()` and `lease()` protect it exactly as they protect a `get`:
 * what another caller or process is loading is waited for, not loaded again.
 * Only the innermost step differs: instead of calling a loader, a request
 * that every strategy let through joins the batch's current wave, and the
 * wave calls `loadMany` once for all of them. A wave leaves when no request
 * of the batch is still on its way (each has either arrived, settled, or
 * said it is waiting on someone else's load through `req.waiting()`), so a
 * batch never waits for another batch that waits for it. Requests that
 * arrive later (a waiter that took over a failed owner's lease) leave in one
 * more wave once nothing is on its way or waiting any more. With
 * `forceFresh`, nothing is read: every identity goes to the fill.
 *
 * @module
 */
import { fanOut, onAbort, type RaceGroup, raceGroup } from "../../../resp/shared/mod.ts";
import type { LoadMany } from "../../cache.ts";
import type { Entry, FillRequest, Outcome } from "../../contract.ts";
import type { Identity } from "../../types.ts";
import { ClosedError } from "../../errors.ts";
import { chained, LoaderChoices, runBatchOrigin } from "../fill/mod.ts";
import type { SharedKeys } from "../read/mod.ts";
import { CallDeadline, isDeadline } from "./deadline.ts";
import { FALLBACK, fallbackRace } from "./fallback_timer.ts";
import { countServed, type GetParts } from "./get.ts";

/** One `getMany` call. */
export interface BatchCall {
  readonly identities: readonly Identity[];
  readonly loadMany: LoadMany<unknown>;
  readonly ttlMs: number;
  readonly tags: readonly string[];
  readonly forceFresh: boolean;
  readonly signal: AbortSignal;
  /** True once the cache is closing: a batch then starts no background refresh. */
  readonly closing: () => boolean;
}

interface Item {
  readonly identity: Identity;
  readonly keys: SharedKeys;
}

/** What the read phase found for one identity: an entry, or that its server could not be reached. */
interface ItemRead {
  readonly entry: Entry | undefined;
  readonly near: boolean;
  /** Its server cannot be reached (onRedisDown "local"): served from this process. */
  readonly down: boolean;
}

/** An identity to fill: what was seen of it, its stale-if-error fallback, and whether Redis is left out. */
interface Missing {
  readonly item: Item;
  readonly seen: Entry | undefined;
  readonly fallback: Entry | undefined;
  readonly offline: boolean;
}

/** The values of `call.identities`, aligned. */
export async function getMany(parts: GetParts, call: BatchCall): Promise<unknown[]> {
  // Duplicates are read and loaded once.
  const unique = new Map<string, Item>();
  const slots = call.identities.map((identity) => {
    const keys = parts.keys(identity);
    if (!unique.has(keys.data)) unique.set(keys.data, { identity, keys });
    return keys.data;
  });
  const items = [...unique.values()];
  // Every wait of the batch races the call's signal through one listener, whatever its size.
  const group = raceGroup(call.signal);
  try {
    return await fillBatch(parts, call, slots, items, group);
  } finally {
    group.dispose();
  }
}

async function fillBatch(
  parts: GetParts,
  call: BatchCall,
  slots: readonly string[],
  items: readonly Item[],
  group: RaceGroup,
): Promise<unknown[]> {
  const waiting = parts.invalidations.whenReady();
  if (waiting !== undefined) await waiting;
  if (call.forceFresh) return await forced(parts, call, slots, items, group);
  // Issued in one tick: they leave in one write (one per node on a cluster).
  // Each joins a read of its key already in flight in this process, if any.
  // With onRedisDown "local", an identity whose server cannot be reached is
  // read from this process instead (and loaded offline if it holds none).
  const outage = parts.outage;
  const reads = await Promise.all(items.map(async (item): Promise<ItemRead> => {
    const key = item.keys.data;
    if (outage !== undefined && outage.access(key) === "skip") return { entry: undefined, near: false, down: true };
    const near = parts.near ? parts.reader.near(key) : undefined;
    try {
      const entry = near ?? await group.race(parts.reader.shared(item.keys, undefined));
      outage?.answered(key);
      return { entry, near: near !== undefined, down: false };
    } catch (error) {
      if (outage === undefined || !outage.failed(key, error)) throw error;
      return { entry: undefined, near: false, down: true };
    }
  }));
  const values = new Map<string, unknown>();
  const missing: Missing[] = [];
  const stale: Item[] = [];
  const early: Item[] = [];
  items.forEach((item, i) => {
    const { entry, near, down } = reads[i]!;
    const key = item.keys.data;
    if (down) {
      if (!servedHere(parts, item, values, missing)) parts.stats.mark("miss", key);
      return;
    }
    const verdict = parts.strategies.judge(entry);
    if (verdict.kind !== "miss") {
      countServed(parts, key, verdict.kind === "stale", near);
      values.set(key, entry!.value);
      if (verdict.kind === "stale") stale.push(item);
      else if (verdict.kind === "refresh") early.push(item);
      return;
    }
    parts.stats.mark("miss", key);
    missing.push({ item, seen: entry, fallback: verdict.fallback, offline: false });
  });
  if (!call.closing()) {
    refresh(parts, call, stale, reads, items, false);
    refresh(parts, call, early, reads, items, true);
  }
  if (missing.length > 0) {
    if (call.signal.aborted) throw call.signal.reason;
    // A close() ran out of time while this batch was reading: it loads nothing.
    if (parts.lifecycle.ended) throw new ClosedError("getMany");
    const fills = new Batch(parts, call, false).fill(missing);
    // swr's soft timeout, per identity that has an old value to serve.
    const soft = parts.fallbackAfterMs;
    const settled = await Promise.allSettled(
      fills.map((fill, i) =>
        group.race(soft === undefined || missing[i]!.fallback === undefined ? fill : fallbackRace(fill, soft))
      ),
    );
    const lost: Item[] = [];
    settled.forEach((result, i) => {
      const { item, fallback } = missing[i]!;
      if (result.status === "fulfilled" && result.value === FALLBACK) {
        parts.stats.emit({ type: "soft-timeout", key: item.keys.data });
        parts.stats.mark("stale", item.keys.data);
        values.set(item.keys.data, fallback!.value);
      } else if (result.status === "fulfilled") values.set(item.keys.data, (result.value as Outcome).value);
      else if (fallback !== undefined && !(call.signal.aborted && !isDeadline(call.signal.reason))) {
        // Stale-if-error, per identity.
        parts.stats.mark("stale", item.keys.data);
        values.set(item.keys.data, fallback.value);
      } else if (outage !== undefined && outage.failed(item.keys.data, result.reason)) lost.push(item);
      else throw result.reason;
    });
    if (lost.length > 0) await fillLost(parts, call, lost, values, group);
  }
  return slots.map((key) => values.get(key));
}

// Redis died while these identities waited for a lease or loaded
// (onRedisDown "local"): served from this process as a get is, what it
// holds for each, else one load each that stores nothing.
async function fillLost(
  parts: GetParts,
  call: BatchCall,
  lost: readonly Item[],
  values: Map<string, unknown>,
  group: RaceGroup,
): Promise<void> {
  const missing: Missing[] = [];
  for (const item of lost) servedHere(parts, item, values, missing);
  if (missing.length === 0) return;
  if (parts.lifecycle.ended) throw new ClosedError("getMany");
  const outcomes = await Promise.all(new Batch(parts, call, false).fill(missing).map((fill) => group.race(fill)));
  outcomes.forEach((outcome, i) => values.set(missing[i]!.item.keys.data, outcome.value));
}

// An identity whose server cannot be reached (onRedisDown "local"): what
// this process holds for it, counted stale, into `values` (true); else a
// load that stores nothing, into `missing` (false).
function servedHere(parts: GetParts, item: Item, values: Map<string, unknown>, missing: Missing[]): boolean {
  const key = item.keys.data;
  parts.stats.emit({ type: "degraded", key, error: parts.outage!.reason(key) });
  const held = parts.reader.local(key);
  if (held === undefined) {
    missing.push({ item, seen: undefined, fallback: undefined, offline: true });
    return false;
  }
  parts.stats.served(key, true, held.near);
  values.set(key, held.entry.value);
  return true;
}

// forceFresh: every identity loaded, none read; a value another owner
// publishes stands in only if its load began after the call.
async function forced(
  parts: GetParts,
  call: BatchCall,
  slots: readonly string[],
  items: readonly Item[],
  group: RaceGroup,
): Promise<unknown[]> {
  const marks = await Promise.all(items.map((item) => group.race(parts.reader.latestNow(item.keys.data, undefined))));
  for (const item of items) parts.stats.mark("miss", item.keys.data);
  if (call.signal.aborted) throw call.signal.reason;
  const fills = new Batch(parts, call, false).fill(
    items.map((item, i) => ({ item, seen: undefined, freshAfter: marks[i] })),
  );
  const outcomes = await Promise.all(fills.map((fill) => group.race(fill)));
  const values = new Map(items.map((item, i) => [item.keys.data, outcomes[i]!.value]));
  return slots.map((key) => values.get(key));
}

// Stale and early-refresh entries are refreshed in the background, as one
// more batch (each identity at most once per cache at a time).
function refresh(
  parts: GetParts,
  call: BatchCall,
  due: Item[],
  reads: { entry: Entry | undefined }[],
  items: readonly Item[],
  early: boolean,
) {
  if (due.length === 0) return;
  const byKey = new Map(due.map((item) => [item.keys.data, item]));
  parts.background.refreshMany([...byKey.keys()], async (claimed) => {
    // Background refreshes belong to the cache: only a close() whose time ran out aborts them.
    const deadline = new CallDeadline(
      `${claimed.length} identities`,
      "refresh",
      undefined,
      undefined,
      0,
      parts.lifecycle.running,
    );
    try {
      const fills = new Batch(parts, { ...call, signal: deadline.signal }, true).fill(claimed.map((key) => {
        const item = byKey.get(key)!;
        return { item, seen: reads[items.indexOf(item)]!.entry };
      }));
      const results = await Promise.allSettled(fills);
      const failed = results.find((r) => r.status === "rejected");
      if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    } finally {
      deadline.dispose();
    }
  }, early);
}

type State = "running" | "arrived" | "waiting" | "loading" | "settled";

interface Slot {
  readonly item: Item;
  /** Loaded for this process alone: its server cannot be reached. */
  readonly offline: boolean;
  state: State;
  req: FillRequest | undefined;
  resolve: ((outcome: Outcome) => void) | undefined;
  reject: ((error: unknown) => void) | undefined;
}

/** The identities of one `getMany` going through the fill chain together. */
class Batch {
  readonly #parts: GetParts;
  readonly #call: BatchCall;
  readonly #background: boolean;
  readonly #slots: Slot[] = [];
  #waves = 0;

  constructor(parts: GetParts, call: BatchCall, background: boolean) {
    this.#parts = parts;
    this.#call = call;
    this.#background = background;
  }

  /**
   * Send every identity of the batch through the fill chain; resolves their
   * outcomes, aligned. Every slot exists before the first request starts: a
   * chain that reaches the innermost step without an await (no strategy, or
   * only in-process ones like coalesce()) must find the others still on
   * their way, or its wave would leave alone.
   */
  fill(
    pending: readonly { item: Item; seen: Entry | undefined; offline?: boolean; freshAfter?: number | undefined }[],
  ): Promise<Outcome>[] {
    const slots = pending.map(({ item, offline }): Slot => ({
      item,
      offline: offline === true,
      state: "running",
      req: undefined,
      resolve: undefined,
      reject: undefined,
    }));
    this.#slots.push(...slots);
    // Each request's signal is listened to by coalesce() and lease(): one
    // per identity on the call's signal would pass Node's ten-listener warning.
    const fan = fanOut(this.#call.signal, slots.length);
    const outcomes = slots.map((slot, i) =>
      this.#start(slot, pending[i]!.seen, pending[i]!.freshAfter, fan.signals[i]!)
    );
    Promise.allSettled(outcomes).then(fan.dispose);
    return outcomes;
  }

  #start(
    slot: Slot,
    seen: Entry | undefined,
    freshAfter: number | undefined,
    signal: AbortSignal,
  ): Promise<Outcome> {
    const parts = this.#parts;
    const fields: FillRequest = {
      keys: slot.item.keys,
      identity: slot.item.identity,
      ttlMs: this.#call.ttlMs,
      tags: this.#call.tags,
      signal,
      background: this.#background,
      seen,
      ...(freshAfter === undefined ? {} : { freshAfter }),
      waiting: () => this.#move(slot, "waiting"),
      ...(slot.offline ? { offline: true } : {}),
    };
    const req = chained(fields, (arrived) =>
      new Promise<Outcome>((resolve, reject) => {
        slot.req = arrived;
        slot.resolve = resolve;
        slot.reject = reject;
        this.#move(slot, "arrived");
      }));
    // The fill outlives the caller: what it started publishes for others,
    // tracked so close() waits for it.
    let outcome: Promise<Outcome>;
    try {
      outcome = parts.strategies.fill(req);
    } catch (error) {
      // A strategy's hook that throws instead of rejecting fails its
      // identity only: the rest of the batch must not wait for it forever.
      outcome = Promise.reject(error);
    }
    const fill = parts.background.track(outcome);
    const settle = () => this.#move(slot, "settled");
    fill.then(settle, settle);
    return fill;
  }

  #move(slot: Slot, state: State): void {
    // A waiter woken to take over is on its way again; settled is final.
    if (slot.state === "settled" || (slot.state === "loading" && state !== "settled")) return;
    slot.state = state;
    this.#maybeLoad();
  }

  #maybeLoad(): void {
    let arrived = 0;
    for (const slot of this.#slots) {
      if (slot.state === "running") return;
      // The first wave leaves without the identities others are loading; a
      // later one (takeovers) waits for them, so takeovers leave together.
      if (slot.state === "waiting" && this.#waves > 0) return;
      if (slot.state === "arrived") arrived++;
    }
    if (arrived === 0) return;
    const wave = this.#slots.filter((slot) => slot.state === "arrived");
    for (const slot of wave) slot.state = "loading";
    this.#waves++;
    void this.#load(wave);
  }

  async #load(wave: Slot[]): Promise<void> {
    const parts = this.#parts;
    const reqs = wave.map((slot) => slot.req!);
    const keys = reqs.map((req) => req.keys.data);
    // loadMany's signal fires once no caller waits for any identity of the wave.
    // One listener per distinct signal (without coalesce() every request
    // carries the call's own), however many identities share it.
    const controller = new AbortController();
    const sharing = new Map<AbortSignal, number>();
    for (const req of reqs) sharing.set(req.signal, (sharing.get(req.signal) ?? 0) + 1);
    let left = reqs.length;
    const leave = (signal: AbortSignal, count: number) => {
      left -= count;
      if (left === 0) controller.abort(signal.reason);
    };
    const stops = [...sharing].map(([signal, count]) => onAbort(signal, () => leave(signal, count)));
    for (const [signal, count] of sharing) if (signal.aborted) leave(signal, count);
    let started = parts.now();
    try {
      // Before the origin is called, as for a get: a clear() or a tag
      // invalidation landing meanwhile leaves this wave's values a miss.
      const stamp = wave.every((slot) => slot.offline)
        ? parts.publisher.stampOffline(this.#call.tags)
        : await parts.publisher.stamp(this.#call.tags);
      const identities = wave.map((slot) => slot.item.identity);
      let values: readonly unknown[];
      const choices = new LoaderChoices(
        parts.choices,
        reqs.map((req) => req.seen),
        wave.every((slot) => slot.offline),
      );
      // Loads start when loadMany is called, past the load hooks (limit()).
      let began = false;
      try {
        values = await runBatchOrigin(
          parts.strategies.load,
          { keys, signal: controller.signal, background: this.#background },
          () => {
            began = true;
            started = parts.now();
            for (const key of keys) parts.stats.emit({ type: "load-start", key, background: this.#background });
            return this.#call.loadMany(identities, choices.batchContext(controller.signal));
          },
        ).finally(() => choices.settle());
        if (!Array.isArray(values) || values.length !== wave.length) {
          throw new TypeError(
            `Cannot getMany: loadMany resolved ${
              Array.isArray(values) ? `${values.length} values` : `a ${typeof values}`
            } for ${wave.length} identities; nothing was cached`,
          );
        }
      } catch (error) {
        if (began) {
          for (const key of keys) parts.stats.emit({ type: "load-end", key, durationMs: parts.now() - started, error });
        }
        throw error;
      }
      const loadMs = Math.max(0, Math.ceil(parts.now() - started));
      await Promise.all(wave.map(async (slot, i) => {
        try {
          slot.resolve!(await parts.publisher.publish(reqs[i]!, values[i], loadMs, stamp, started, choices.items[i]));
        } catch (error) {
          slot.reject!(error);
        }
      }));
    } catch (error) {
      for (const slot of wave) slot.reject!(error);
    } finally {
      for (const stop of stops) stop();
    }
  }
}
