/**
 * `jitter()`: spread the expiry of entries filled together.
 *
 * @module
 */
import type { CacheContext, Strategy } from "./contract.ts";
import { checkedOptions, positiveInt } from "../resp/shared/mod.ts";

/** Options of {@linkcode jitter}. */
export interface JitterOptions {
  /** How far below the TTL a published fresh window may be drawn, in ms; less than the TTL. */
  spreadMs: number;
}

/** Every option of {@linkcode JitterOptions}: any other key is refused, naming the close one. */
const JITTER_OPTIONS = Object.keys({ spreadMs: true } satisfies Record<keyof JitterOptions, true>);

/** The strategy {@linkcode jitter} returns, with its setting. */
export interface JitterStrategy extends Strategy {
  /** Always `"jitter"`. */
  readonly name: "jitter";
  /** The `spreadMs` option: how far below the TTL a fresh window may be drawn, in ms. */
  readonly spreadMs: number;
}

/**
 * Draw each published entry's fresh window uniformly among the whole
 * milliseconds of `[ttl - spreadMs, ttl]`, once per publish, so keys warmed
 * together do not all expire in the same instant. The TTL is an upper bound:
 * the injected `random()` mapping is `0 -> ttl - spreadMs` and `-> 1 -> ttl`.
 * Not-found markers keep exactly `negativeTtlMs`.
 *
 * @param options the spread.
 * @returns a strategy for {@linkcode pipeline}; one object per cache.
 * @throws {RangeError} when `spreadMs` is not a positive integer, or (when the
 *   pipeline is built, or a call passes its own `ttlMs`) not below the TTL.
 * @example Expire within the last 10 seconds of a minute
 * ```ts
 * import { connect, jitter, pipeline } from "@herdless/herdless";
 * const redis = await connect(process.env.REDIS_URL);
 * const cache = pipeline({ redis, ttlMs: 60_000 }, jitter({ spreadMs: 10_000 }));
 * await cache.get("jitter-example", () => "v");
 * console.log(Number(await redis.send(["PTTL", cache.keys("jitter-example").data])) > 49_000); // true
 * await cache.close();
 * await redis.close();
 * ```
 */
export function jitter(options: JitterOptions): JitterStrategy {
  const o = checkedOptions<JitterOptions>("create jitter", "jitter()", options, JITTER_OPTIONS);
  const spreadMs = positiveInt("create jitter", "spreadMs", o.spreadMs);
  let cache: CacheContext | undefined;
  function checkTtl(ttlMs: number): void {
    if (spreadMs >= ttlMs) {
      throw new RangeError(`Cannot use jitter: 'spreadMs' (${spreadMs}) must be less than the TTL (${ttlMs})`);
    }
  }
  return {
    name: "jitter",
    spreadMs,
    attach(c) {
      cache = c;
      checkTtl(c.ttlMs);
    },
    checkTtl,
    write(plan) {
      if (plan.negative) return;
      const r = cache?.random() ?? Math.random();
      // Checked here, where it is drawn: a draw outside [0, 1] would reach
      // the publication as a TTL of NaN or of a window past the one asked for.
      if (!(r >= 0 && r <= 1)) {
        throw new RangeError(`Cannot use jitter: the pipeline's 'random' must return a number in [0, 1), got ${r}`);
      }
      // floor(r * (spread + 1)) covers every whole ms in [0, spread]; r = 1
      // (a generous injected random) is clamped rather than overshooting.
      plan.freshMs -= spreadMs - Math.min(spreadMs, Math.floor(r * (spreadMs + 1)));
    },
  };
}
