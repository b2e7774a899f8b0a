/**
 * `swr()`: stale-while-revalidate and stale-if-error.
 *
 * @module
 */
import type { CacheContext, Strategy } from "./contract.ts";
import { checkWindow } from "./limits.ts";
import { checkedOptions, positiveInt } from "../resp/shared/mod.ts";

/** Options of {@linkcode swr}. */
export interface SwrOptions {
  /** How long after the fresh window an entry is still served (stale) while one background refresh runs, in ms. */
  staleMs: number;
  /** How long after the stale window an entry is still served when its reload fails, in ms. @default {0} */
  ifErrorMs?: number;
  /** Most background refreshes running at once per cache; more are dropped and counted in `refreshesDropped`. @default {16} */
  maxRefreshes?: number;
  /**
   * A caller in the error window (loading, joined to a load, or waiting on
   * another process' lease) that has waited this long gets the old value
   * (stale) while the load goes on in the background and publishes; needs
   * `ifErrorMs` above 0. Unset: such a caller waits for the load (bounded by
   * its `timeoutMs`). @default {undefined}
   */
  softTimeoutMs?: number;
}

/** Every option of {@linkcode SwrOptions}: any other key is refused, naming the close one. */
const SWR_OPTIONS = Object.keys(
  { staleMs: true, ifErrorMs: true, maxRefreshes: true, softTimeoutMs: true } satisfies Record<keyof SwrOptions, true>,
);

/** The strategy {@linkcode swr} returns, with its settings. */
export interface SwrStrategy extends Strategy {
  /** Always `"swr"`. */
  readonly name: "swr";
  /** The `staleMs` option: how long past its fresh window an entry is served stale while one refresh runs, in ms. */
  readonly staleMs: number;
  /** The `ifErrorMs` option: how long after the stale window an entry is still served when its reload fails, in ms. */
  readonly ifErrorMs: number;
  /** The `maxRefreshes` option: most background refreshes running at once per cache. */
  readonly maxRefreshes: number;
  /** The `softTimeoutMs` option, or `undefined`. */
  readonly softTimeoutMs: number | undefined;
}

/**
 * Keep serving an entry after its fresh window while it is refreshed.
 *
 * Each published value lives `ttl + staleMs + ifErrorMs` in Redis (its
 * physical TTL); the envelope records both windows and the server's `TIME`
 * at publication (`publishedAt`), so every reader agrees on them: it judges
 * the entry's age against its estimate of that server's clock, with no PTTL
 * sent and no local wall clock read. A read in the stale window returns the
 * stale value at once and starts one background refresh (under `lease()`,
 * one across all processes; per cache at most `maxRefreshes` at a time,
 * drained by `close()`). A read in the error window loads like a miss, but if
 * the load fails (origin error, wait timeout, `OverloadedError`) it gets the
 * old value instead of the error. A failed refresh never re-stores the old
 * value, so it never moves the entry's final deadline. Not-found markers get
 * no windows.
 *
 * @param options the windows and the refresh cap.
 * @returns a strategy for {@linkcode pipeline}; one object per cache.
 * With `softTimeoutMs`, a caller in the error window waits at most that
 * long for the load: then it gets the old value (counted in `stale` and in
 * `softTimeouts`) and the load goes on in the background, tracked by the
 * cache (`close()` waits for it), and publishes.
 *
 * @throws {RangeError} when `staleMs` or `ifErrorMs` is not a non-negative integer, `maxRefreshes` or
 * `softTimeoutMs` not a positive integer, or `softTimeoutMs` is given without `ifErrorMs`.
 * @example Serve stale for a minute, and for an hour if the origin is down
 * ```ts
 * import { connect, lease, pipeline, swr } from "@herdless/herdless";
 * const redis = await connect(process.env.REDIS_URL);
 * const cache = pipeline({ redis, ttlMs: 10_000 }, swr({ staleMs: 60_000, ifErrorMs: 3_600_000 }), lease());
 * console.log(await cache.get("swr-example", () => "v")); // "v"
 * await cache.close();
 * await redis.close();
 * ```
 */
export function swr(options: SwrOptions): SwrStrategy {
  const o = checkedOptions<SwrOptions>("create swr", "swr()", options, SWR_OPTIONS);
  const staleMs = checkWindow("create swr", "staleMs", o.staleMs, 0);
  const ifErrorMs = checkWindow("create swr", "ifErrorMs", o.ifErrorMs ?? 0, 0);
  const maxRefreshes = positiveInt("create swr", "maxRefreshes", o.maxRefreshes ?? 16);
  const softTimeoutMs = o.softTimeoutMs === undefined
    ? undefined
    : positiveInt("create swr", "softTimeoutMs", o.softTimeoutMs);
  if (softTimeoutMs !== undefined && ifErrorMs === 0) {
    throw new RangeError(
      "Cannot create swr: 'softTimeoutMs' needs 'ifErrorMs' above 0 (the old value served on a soft timeout lives in the error window)",
    );
  }
  return {
    name: "swr",
    staleMs,
    ifErrorMs,
    maxRefreshes,
    softTimeoutMs,
    attach(c: CacheContext) {
      c.limitRefreshes(maxRefreshes);
      if (softTimeoutMs !== undefined) c.fallbackAfter(softTimeoutMs);
    },
    read(verdict, entry) {
      if (verdict.kind !== "miss" || entry === undefined || entry.negative) return verdict;
      // The windows are the ones stored with the entry, not ours: every
      // reader judges an entry the same way, whatever it was configured with.
      const staleLeft = entry.freshMs + entry.staleMs;
      if (staleLeft > 0) return { kind: "stale" };
      if (staleLeft + entry.ifErrorMs > 0) return { kind: "miss", fallback: entry };
      return verdict;
    },
    write(plan) {
      plan.staleMs = staleMs;
      plan.ifErrorMs = ifErrorMs;
    },
  };
}
