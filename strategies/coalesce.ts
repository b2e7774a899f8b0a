/**
 * `coalesce()`: in-process single flight per data key.
 *
 * @module
 */
import { onAbort } from "../resp/shared/mod.ts";
import type { CacheContext, Outcome, Strategy } from "./contract.ts";

/** The strategy {@linkcode coalesce} returns. */
export interface CoalesceStrategy extends Strategy {
  /** Always `"coalesce"`. */
  readonly name: "coalesce";
  /** Loads in flight right now (entries leave on success and on failure). */
  readonly size: number;
}

// A forceFresh flight's key: no data key starts with it.
const FORCED = "\u0000";

interface Flight {
  readonly promise: Promise<Outcome>;
  readonly controller: AbortController;
  callers: number;
}

/**
 * Share one fill among the callers of this process that miss the same key at
 * the same time: the first starts it, the others join it (counted as
 * `coalesced`) and get its value or its error.
 *
 * Each caller keeps its own signal and timeout and may leave early; the
 * shared load's signal fires only once every caller waiting on it has gone.
 * The flight leaves the map when it settles, success or failure, so an error
 * is never served to later callers; a caller who arrives once every caller
 * of a flight has left starts a new flight rather than join the abandoned one. Background refreshes pass through
 * unshared (the cache runs at most one per key already), but a caller who
 * misses while one runs for its key waits for it and takes its value (a
 * refresh that ends with none, skipped or failed, leaves the caller to load):
 * `lease()` would have held the caller back in Redis, but it steps aside
 * while Redis refuses writes or cannot be reached. A `forceFresh`
 * call shares a flight only with the other `forceFresh` calls of its key: a
 * plain flight may have begun loading before it was made.
 *
 * @returns a strategy for {@linkcode pipeline}; one object per cache.
 * @example Fifty callers, one load
 * ```ts
 * import { coalesce, connect, pipeline } from "@herdless/herdless";
 * const redis = await connect(process.env.REDIS_URL);
 * const cache = pipeline({ redis, ttlMs: 1000 }, coalesce());
 * let loads = 0;
 * await Promise.all(Array.from({ length: 50 }, () => cache.get("coalesce-example", () => ++loads)));
 * console.log(loads); // 1
 * await cache.close();
 * await redis.close();
 * ```
 */
export function coalesce(): CoalesceStrategy {
  const flights = new Map<string, Flight>();
  /** Background refreshes in flight, by data key. */
  const refreshes = new Map<string, Promise<Outcome>>();
  let cache: CacheContext | undefined;
  return {
    name: "coalesce",
    stage: "process",
    get size() {
      return flights.size;
    },
    attach(c) {
      cache = c;
    },
    superseded(key) {
      // The flight keeps its callers; a caller arriving now must not get a
      // value older than one this process already served (or one loaded
      // before an invalidation it saw resolve).
      if (key === undefined) {
        flights.clear();
        refreshes.clear();
      } else {
        if (flights.size > 0) {
          flights.delete(key);
          flights.delete(FORCED + key);
        }
        refreshes.delete(key);
      }
    },
    fill(next) {
      return function coalesced(req) {
        // A background refresh may end "skipped" (another process refreshes)
        // with no value: a caller who missed must never receive that. The
        // cache already runs at most one refresh per key, so nothing is lost.
        if (req.background) {
          const refresh = next(req);
          const key = req.keys.data;
          refreshes.set(key, refresh);
          const done = () => {
            if (refreshes.get(key) === refresh) refreshes.delete(key);
          };
          refresh.then(done, done);
          return refresh;
        }
        const key = req.freshAfter === undefined ? req.keys.data : FORCED + req.keys.data;
        let flight = flights.get(key);
        // A flight whose callers all left is aborted but stays in the map
        // until its loader unwinds (a lease release is one more round trip);
        // joining it would hand this caller another caller's abort reason.
        // Start a new flight instead; the old one's leave() spares it.
        if (flight === undefined || flight.controller.signal.aborted) {
          const controller = new AbortController();
          // A forceFresh flight never takes a refresh's value: it may have begun before the call.
          const refresh = req.freshAfter === undefined ? refreshes.get(key) : undefined;
          const load = () => next({ ...req, signal: controller.signal });
          if (refresh !== undefined) cache?.emit({ type: "coalesced", key: req.keys.data });
          const promise = refresh === undefined ? load() : refresh.then(
            (outcome) => outcome.from === "skipped" ? load() : outcome,
            load,
          );
          const created: Flight = { promise, controller, callers: 0 };
          flights.set(key, created);
          const leave = () => {
            if (flights.get(key) === created) flights.delete(key);
          };
          promise.then(leave, leave);
          flight = created;
        } else {
          cache?.emit({ type: "coalesced", key: req.keys.data });
          // A getMany batch loads its other identities meanwhile.
          req.waiting?.();
        }
        const joined = flight;
        joined.callers++;
        const signal = req.signal;
        const leave = () => {
          if (--joined.callers === 0) joined.controller.abort(signal.reason);
        };
        if (signal.aborted) leave();
        else {
          const stop = onAbort(signal, leave);
          joined.promise.then(stop, stop);
        }
        return joined.promise;
      };
    },
  };
}
