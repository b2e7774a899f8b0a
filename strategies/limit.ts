/**
 * `limit()`: bound origin concurrency and shed what cannot start in time.
 *
 * @module
 */
import { clearTimeout, setTimeout } from "node:timers";
import { checkedOptions, nonNegativeInt, onAbort, positiveInt } from "../resp/shared/mod.ts";
import { OverloadedError } from "./errors.ts";
import type { CacheContext, LoadRequest, Strategy } from "./contract.ts";

/** Options of {@linkcode limit}. */
export interface LimitOptions {
  /** Most origin calls in flight at once per cache (a `getMany`'s `loadMany` counts as one). */
  concurrency: number;
  /** How long a load may queue for a free slot before it is shed; 0 sheds at once. @default {0} */
  queueMs?: number;
}

/** Every option of {@linkcode LimitOptions}: any other key is refused, naming the close one. */
const LIMIT_OPTIONS = Object.keys({ concurrency: true, queueMs: true } satisfies Record<keyof LimitOptions, true>);

/** The strategy {@linkcode limit} returns, with its settings and live counts. */
export interface LimitStrategy extends Strategy {
  /** Always `"limit"`. */
  readonly name: "limit";
  /** The `concurrency` option: most origin loads in flight at once per cache. */
  readonly concurrency: number;
  /** The `queueMs` option: how long a load may queue for a free slot before it is shed, in ms. */
  readonly queueMs: number;
  /** Loads running now. */
  readonly active: number;
  /** Loads queued for a slot now. */
  readonly queued: number;
}

interface Queued {
  readonly start: () => void;
}

/**
 * At most `concurrency` loads run at once in this cache; a load that cannot
 * start within `queueMs` is refused with {@linkcode OverloadedError}
 * (counted in `shed`), and the origin is not called for it. A caller that
 * `swr()` lets hold a stale value gets that value instead of the error.
 * Queued loads start in arrival order; a queued caller that gives up leaves
 * the queue.
 *
 * The slot is held while the origin call runs, and only then: not while a
 * caller waits for a lease, reads Redis or publishes (a slow Redis must not
 * look like a busy origin). Its place among the strategies does not matter.
 *
 * @param options the limit and the queueing time.
 * @returns a strategy for {@linkcode pipeline}; one object per cache.
 * @throws {RangeError} when `concurrency` is not a positive integer or `queueMs` not a non-negative integer.
 * @example Four loads at a time, shed after 100 ms in the queue
 * ```ts
 * import { connect, lease, limit, pipeline } from "@herdless/herdless";
 * const redis = await connect(process.env.REDIS_URL);
 * const cache = pipeline({ redis, ttlMs: 5000 }, lease(), limit({ concurrency: 4, queueMs: 100 }));
 * console.log(await cache.get("limit-example", () => "v")); // "v"
 * await cache.close();
 * await redis.close();
 * ```
 */
export function limit(options: LimitOptions): LimitStrategy {
  const o = checkedOptions<LimitOptions>("create limit", "limit()", options, LIMIT_OPTIONS);
  const concurrency = positiveInt("create limit", "concurrency", o.concurrency);
  const queueMs = nonNegativeInt("create limit", "queueMs", o.queueMs ?? 0);
  const queue: Queued[] = [];
  let active = 0;
  let cache: CacheContext | undefined;

  function shed(req: LoadRequest, queuedMs: number): OverloadedError {
    const what = req.keys.length === 1 ? req.keys[0] : `${req.keys.length} keys (${req.keys[0]}...)`;
    for (const key of req.keys) cache?.emit({ type: "shed", key });
    return new OverloadedError(
      `Cannot load ${what}: ${concurrency} loads in flight and no slot freed within queueMs (${queueMs} ms)`,
      concurrency,
      queuedMs,
    );
  }

  function done(): void {
    const waiting = queue.shift();
    if (waiting === undefined) active--;
    else waiting.start(); // The slot passes straight on: `active` is unchanged.
  }

  return {
    name: "limit",
    concurrency,
    queueMs,
    get active() {
      return active;
    },
    get queued() {
      return queue.length;
    },
    attach(c) {
      cache = c;
    },
    load(next) {
      return function limited(req) {
        const run = () => next({ ...req }).finally(done);
        if (active < concurrency) {
          active++;
          return run();
        }
        if (queueMs === 0) return Promise.reject(shed(req, 0));
        if (req.signal.aborted) return Promise.reject(req.signal.reason);
        return new Promise<readonly unknown[]>((resolve, reject) => {
          const since = cache?.now() ?? 0;
          const leave = () => {
            const i = queue.indexOf(item);
            if (i >= 0) queue.splice(i, 1);
            clearTimeout(timer);
            stop();
          };
          const stop = onAbort(req.signal, () => {
            leave();
            reject(req.signal.reason);
          });
          const item: Queued = {
            start: () => {
              leave();
              run().then(resolve, reject);
            },
          };
          const timer = setTimeout(() => {
            leave();
            reject(shed(req, Math.round((cache?.now() ?? since) - since)));
          }, queueMs);
          queue.push(item);
        });
      };
    },
  };
}
