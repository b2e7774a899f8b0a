/**
 * Recipe 000 ("Redis Cache Stampedes: Single Flight, TTL Jitter, and
 * Stale-While-Revalidate", seeds/000): the article's `get_or_load` over our
 * own client. Under one deadline (`asyncio.timeout(wait_s)`, which covers
 * the owner's load too): GET; on a miss `SET lease token NX PX lease_ms`;
 * the owner rechecks the data key, loads, and publishes through a script
 * that stores the value only while it still holds the lease (and deletes
 * it); a rejected publish reads again. The TTL is `ttl_ms - randbelow(
 * jitter_ms + 1)`, never above the configured one. A loser sleeps
 * uniform(10, 25) ms and tries again; nothing is served stale, nothing is
 * refreshed early, and a caller whose deadline passes gets a TimeoutError
 * (the owner's load is abandoned, its lease released best-effort within
 * 200 ms) rather than loading.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { Script, TimeoutError } from "../../../resp/mod.ts";
import { clocks, counters, type Recipe, type RecipeEnv, RELEASE, token } from "./types.ts";

/** Recipe 000's settings; the defaults are the article's. */
export interface LeasePublishOptions extends RecipeEnv {
  /** `jitter_ms=1_000` of `ttl_ms=10_000`: the lab scales it to a tenth of the TTL. @default {ttlMs / 10} */
  jitterMs?: number;
  /** `lease_ms=1_500`. @default {1500} */
  leaseMs?: number;
  /** `wait_s=2.0`: the caller's whole budget, owner's load included. @default {2000} */
  waitMs?: number;
}

const PUBLISH = new Script(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('DEL', KEYS[1])
return 1
`);

/** The article's `keys_for`: both keys share one hash tag. */
export function keysFor(identity: string): [string, string] {
  const digest = createHash("sha256").update(identity).digest("hex");
  return [`stampede:{${digest}}:data`, `stampede:{${digest}}:lease`];
}

class Cancelled extends Error {}

/** Recipe 000: lease, ownership-checked publish, recheck, jitter below the TTL, 10-25 ms polls, a deadline. */
export function leasePublishRecipe(options: LeasePublishOptions): Recipe {
  const { redis, ttlMs } = options;
  const { sleep, random } = clocks(options);
  const jitterMs = options.jitterMs ?? Math.floor(ttlMs / 10);
  const leaseMs = options.leaseMs ?? 1500;
  const waitMs = options.waitMs ?? 2000;
  for (const [name, v] of [["ttlMs", ttlMs], ["jitterMs", jitterMs], ["leaseMs", leaseMs]] as const) {
    if (!Number.isInteger(v)) throw new RangeError(`Cannot create recipe 000: '${name}' must be an integer, got ${v}`);
  }
  if (ttlMs <= 0 || leaseMs <= 0 || !(jitterMs >= 0 && jitterMs < ttlMs)) {
    throw new RangeError(`Cannot create recipe 000: invalid TTL, jitter, or lease duration`);
  }
  if (!(waitMs > 0)) throw new RangeError(`Cannot create recipe 000: 'waitMs' must be positive, got ${waitMs}`);
  const stats = counters();

  async function attempt(
    identity: string,
    loader: () => Promise<string>,
    cancelled: Promise<never>,
    gone: () => boolean,
  ) {
    const [dataKey, leaseKey] = keysFor(identity);
    let missed = false;
    let waited = false;
    for (;;) {
      const cached = (await redis.send(["GET", dataKey])) as string | null;
      if (gone()) throw new Cancelled();
      if (cached !== null) {
        stats.hits++;
        return cached;
      }
      if (!missed) stats.misses++;
      missed = true;
      const mine = token(random);
      const acquired = await redis.send(["SET", leaseKey, mine, "NX", "PX", leaseMs]);
      if (gone()) throw new Cancelled();
      if (acquired !== null) {
        stats.leasesWon++;
        try {
          // Another owner may have filled between GET and SET NX.
          const again = (await redis.send(["GET", dataKey])) as string | null;
          if (gone()) throw new Cancelled();
          if (again !== null) {
            stats.hits++;
            return again;
          }
          stats.loads++;
          // The deadline interrupts the owner too (asyncio cancels the awaited loader).
          const value = await Promise.race([loader(), cancelled]);
          const ttl = ttlMs - Math.floor(random() * (jitterMs + 1));
          // The article's redis.eval sends the script body every time.
          const accepted = await redis.send(["EVAL", PUBLISH.lua, 2, leaseKey, dataKey, mine, value, ttl]);
          if (accepted === 1) return value;
          // The lease expired: discard this result and read again.
          stats.lateRejected++;
        } finally {
          await RELEASE.run(redis, [leaseKey], [mine], { timeoutMs: 200 }).catch(() => {});
        }
      }
      if (!waited) stats.waits++;
      waited = true;
      await sleep(10 + 15 * random());
      if (gone()) throw new Cancelled();
    }
  }

  return {
    name: "recipe 000",
    stats: () => ({ ...stats }),
    async get(identity, loader) {
      let over = false;
      let cancel: (e: Error) => void = () => {};
      const cancelled = new Promise<never>((_, reject) => (cancel = reject));
      cancelled.catch(() => {});
      const deadline = sleep(waitMs).then(() => {
        over = true;
        cancel(new Cancelled());
        throw new TimeoutError(`recipe 000: no value within wait_s (${waitMs} ms)`, waitMs);
      });
      deadline.catch(() => {});
      const work = attempt(identity, loader, cancelled, () => over);
      work.catch(() => {});
      try {
        return await Promise.race([work, deadline]);
      } catch (error) {
        if (error instanceof TimeoutError || error instanceof Cancelled) {
          stats.timeouts++;
          throw error instanceof TimeoutError
            ? error
            : new TimeoutError(`recipe 000: no value within wait_s (${waitMs} ms)`, waitMs);
        }
        throw error;
      } finally {
        over = true;
      }
    },
  };
}
