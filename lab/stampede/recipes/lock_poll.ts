/**
 * Recipe 001 ("This Fixes: The Cache Stampede When a Hot Key Expires",
 * seeds/001): the article's `get_or_compute`, line for line, over our own
 * client. A per-key `SET lock:key token NX EX 10` lock released by a
 * compare-and-delete script; an envelope {value, expiry, delta} whose
 * logical expiry is the writer's wall clock plus the TTL times
 * uniform(0.9, 1.1); XFetch on every read with the reader's wall clock; a
 * physical TTL of TTL + stale grace; a loser with a copy serves it; a loser
 * without one polls 50 x 50 ms and then calls compute() itself, unpublished
 * ("last resort under a slow rebuild"); the owner's publish is an
 * unconditional SET.
 *
 * One change of unit only: the article's seconds (`EX`, `ex=int(ttl +
 * grace)`) become milliseconds (`PX`), so the lab can use sub-second TTLs.
 *
 * @module
 */
import { clocks, counters, type Recipe, type RecipeEnv, RELEASE, token } from "./types.ts";

/** Recipe 001's settings; the defaults are the article's constants. */
export interface LockPollOptions extends RecipeEnv {
  /** `LOCK_TTL = 10` s. @default {10000} */
  lockTtlMs?: number;
  /** XFetch's beta. @default {1} */
  beta?: number;
  /** `stale_grace=60` s: how long past its logical expiry a value stays stored. @default {60000} */
  staleGraceMs?: number;
  /** `range(50)`. @default {50} */
  polls?: number;
  /** `time.sleep(0.05)`. @default {50} */
  pollEveryMs?: number;
}

interface Entry {
  value: string;
  expiry: number;
  delta: number;
}

/** Recipe 001: SET NX lock, XFetch on the wall clock, +-10% jitter, poll 50 x 50 ms then compute. */
export function lockPollRecipe(options: LockPollOptions): Recipe {
  const { redis, ttlMs } = options;
  const { now, sleep, random } = clocks(options);
  const lockTtlMs = options.lockTtlMs ?? 10_000;
  const beta = options.beta ?? 1;
  const staleGraceMs = options.staleGraceMs ?? 60_000;
  const polls = options.polls ?? 50;
  const pollEveryMs = options.pollEveryMs ?? 50;
  const stats = counters();

  async function store(key: string, value: string, ttl: number, delta: number): Promise<void> {
    const entry: Entry = { value, expiry: now() + ttl, delta };
    // Unconditional: whoever finishes last wins, lock or no lock.
    await redis.send(["SET", key, JSON.stringify(entry), "PX", Math.trunc(ttl + staleGraceMs)]);
  }

  async function recompute(key: string, compute: () => Promise<string>): Promise<string> {
    const started = now();
    stats.loads++;
    const value = await compute();
    const delta = now() - started;
    const jittered = ttlMs * (0.9 + 0.2 * random());
    await store(key, value, jittered, delta);
    return value;
  }

  return {
    name: "recipe 001",
    stats: () => ({ ...stats }),
    async get(key, compute) {
      const t = now();
      const raw = (await redis.send(["GET", key])) as string | null;
      let entry: Entry | undefined;
      if (raw !== null) {
        entry = JSON.parse(raw) as Entry;
        const early = t - entry.delta * beta * Math.log(random());
        if (early < entry.expiry) {
          stats.hits++;
          return entry.value;
        }
      }
      const expired = entry === undefined || t >= entry.expiry;
      if (expired) stats.misses++;
      else stats.earlyRefreshes++;
      const lockKey = `lock:${key}`;
      const mine = token(random);
      if ((await redis.send(["SET", lockKey, mine, "NX", "PX", lockTtlMs])) !== null) {
        stats.leasesWon++;
        try {
          return await recompute(key, compute);
        } finally {
          await RELEASE.run(redis, [lockKey], [mine]).catch(() => {});
        }
      }
      if (entry !== undefined) {
        if (expired) stats.stale++;
        else stats.hits++;
        return entry.value;
      }
      stats.waits++;
      for (let i = 0; i < polls; i++) {
        await sleep(pollEveryMs);
        const again = (await redis.send(["GET", key])) as string | null;
        if (again !== null) return (JSON.parse(again) as Entry).value;
      }
      stats.loads++;
      return compute();
    },
  };
}
