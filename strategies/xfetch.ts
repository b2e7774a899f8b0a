/**
 * `xfetch()`: probabilistic early refresh (Vattani, Chierichetti, Lowenstein:
 * "Optimal Probabilistic Cache Stampede Prevention", VLDB 2015).
 *
 * @module
 */
import type { CacheContext, Strategy } from "./contract.ts";
import { checkedOptions, positiveNumber } from "../resp/shared/mod.ts";

/** Options of {@linkcode xfetch}. */
export interface XfetchOptions {
  /** Eagerness: above 1 refreshes earlier, below 1 later. @default {1} */
  beta?: number;
}

/** Every option of {@linkcode XfetchOptions}: any other key is refused, naming the close one. */
const XFETCH_OPTIONS = Object.keys({ beta: true } satisfies Record<keyof XfetchOptions, true>);

/** The strategy {@linkcode xfetch} returns, with its setting. */
export interface XfetchStrategy extends Strategy {
  /** Always `"xfetch"`. */
  readonly name: "xfetch";
  /** The `beta` option: above 1 refreshes earlier, below 1 later. */
  readonly beta: number;
}

/**
 * Refresh a hot entry before it expires, so readers never see the expiry.
 * The envelope records how long the last load took (delta); a read whose
 * entry is still fresh refreshes early when
 * `-delta * beta * ln(u) >= remaining fresh time`, with `u = 1 - random()`
 * in (0, 1] (so an injected `random()` of 0 never refreshes early and one
 * close to 1 always does). The probability climbs as expiry nears and with
 * slower loads. The caller gets the current value at once; the refresh runs
 * in the background (under `lease()`, one refresher across all processes),
 * counted in `earlyRefreshes` when it starts (not when a refresh of the key
 * is already running in this cache, nor when `maxRefreshes` drops it). The remaining fresh time is the
 * entry's `publishedAt` (the server's `TIME` at publication) against this client's estimate of that server's
 * clock: no PTTL is sent, and no local wall clock is read.
 *
 * @param options how eager the early refresh is.
 * @returns a strategy for {@linkcode pipeline}; one object per cache.
 * @throws {RangeError} when `beta` is not a positive finite number.
 * @example Hot keys that never expire under load
 * ```ts
 * import { connect, lease, pipeline, xfetch } from "@herdless/herdless";
 * const redis = await connect(process.env.REDIS_URL);
 * const cache = pipeline({ redis, ttlMs: 30_000 }, xfetch({ beta: 1 }), lease());
 * console.log(await cache.get("xfetch-example", () => "v")); // "v"
 * await cache.close();
 * await redis.close();
 * ```
 */
export function xfetch(options?: XfetchOptions): XfetchStrategy {
  const o = checkedOptions<XfetchOptions>("create xfetch", "xfetch()", options, XFETCH_OPTIONS);
  const beta = positiveNumber("create xfetch", "beta", o.beta ?? 1);
  let random: () => number = Math.random;
  return {
    name: "xfetch",
    beta,
    attach(c: CacheContext) {
      random = c.random;
    },
    read(verdict, entry) {
      if (verdict.kind !== "hit" || entry === undefined || entry.freshMs === Infinity) return verdict;
      const gap = -entry.loadMs * beta * Math.log(1 - random());
      return gap >= entry.freshMs ? { kind: "refresh" } : verdict;
    },
  };
}
