/**
 * Recipe 002 ("Cache Stampede Prevention: Request Coalescing and Early
 * Expiry", seeds/002): the article's layers put together the way its last
 * sections say to stack them, over our own client.
 *
 * - Single flight per process: one task per key; each caller waits with
 *   its own timeout (the usage's 2.0 s) and the task runs on if it leaves.
 * - Cross-replica lock: `SET lock:<key> token NX PX 5000`, token-checked
 *   release; a loser with a copy serves it ("serve stale, if a previous
 *   value is still retained"), one without waits 50, 100, 200, 400, 500 ms
 *   re-reading, then fails fast with a TimeoutError.
 * - XFetch envelope {v, value, delta, expiry}: delta on the monotonic clock,
 *   expiry on the writer's wall clock; early refresh when
 *   `now - delta * beta * ln(1 - random()) >= expiry`, checked by the reader.
 * - TTL jitter +-15% (`JITTER = 0.15`); the physical TTL is the jittered one
 *   plus a hard stale window (stale-while-revalidate's hard TTL).
 * - A backing-store limit: 20 slots per process, a 0.5 s queue, then
 *   `Overloaded`; `warmup()` preloads hot keys through the same limit.
 * - The publish is a plain SET (the article's `cache.set`): unconditional.
 *
 * @module
 */
import { TimeoutError } from "../../../resp/mod.ts";
import { clocks, counters, type Recipe, type RecipeEnv, RELEASE, token } from "./types.ts";

/** Recipe 002's settings; the defaults are the article's constants. */
export interface LayeredOptions extends RecipeEnv {
  /** `LOCK_TTL_MS = 5000`. @default {5000} */
  lockTtlMs?: number;
  /** `attempts=5`. @default {5} */
  attempts?: number;
  /** XFetch's beta. @default {1} */
  beta?: number;
  /** `JITTER = 0.15`. @default {0.15} */
  jitter?: number;
  /** `DB_SLOTS = Semaphore(20)`. @default {20} */
  slots?: number;
  /** `QUEUE_TIMEOUT = 0.5` s. @default {500} */
  queueMs?: number;
  /** The single flight's per-caller `timeout=2.0` s. @default {2000} */
  flightTimeoutMs?: number;
  /** Hard TTL beyond the (jittered) soft one: the longest a value is served stale. @default {ttlMs / 2} */
  hardStaleMs?: number;
}

/** The article's `Overloaded`: the store is saturated; callers map it to a 503. */
export class OverloadedError extends Error {
  constructor(key: string) {
    super(`recipe 002: ${key}: no backing-store slot within the queue timeout`);
    this.name = "OverloadedError";
  }
}

interface Envelope {
  v: number;
  value: string;
  delta: number;
  expiry: number;
}

/** What a flight answers: the value and how it got it (a copy past its expiry is stale). */
interface Refreshed {
  value: string;
  served: "loaded" | "waited" | "copy" | "stale";
}

const ENVELOPE_VERSION = 1;

/** Recipe 002 with its `warmup(keys, query)`. */
export interface LayeredRecipe extends Recipe {
  /** Preload `keys` through the slot limit; resolves with how many loaded. */
  warmup(keys: readonly string[], query: (key: string) => Promise<string>): Promise<number>;
}

/** Recipe 002: single flight, lock, XFetch envelope, jitter, a slot limit, warm-up. */
export function layeredRecipe(options: LayeredOptions): LayeredRecipe {
  const { redis, ttlMs } = options;
  const { now, monotonic, sleep, random } = clocks(options);
  const lockTtlMs = options.lockTtlMs ?? 5000;
  const attempts = options.attempts ?? 5;
  const beta = options.beta ?? 1;
  const jitter = options.jitter ?? 0.15;
  const queueMs = options.queueMs ?? 500;
  const flightTimeoutMs = options.flightTimeoutMs ?? 2000;
  const hardStaleMs = options.hardStaleMs ?? Math.floor(ttlMs / 2);
  const stats = counters();
  const inflight = new Map<string, Promise<Refreshed>>();
  let free = options.slots ?? 20;
  const queue: (() => void)[] = [];

  async function acquireSlot(key: string): Promise<void> {
    if (free > 0) {
      free--;
      return;
    }
    let grant: () => void = () => {};
    const granted = new Promise<boolean>((resolve) => (grant = () => resolve(true)));
    queue.push(grant);
    const won = await Promise.race([granted, sleep(queueMs).then(() => false)]);
    if (won) return;
    const at = queue.indexOf(grant);
    if (at >= 0) queue.splice(at, 1);
    else releaseSlot(); // Granted in the same turn the queue time ran out: hand the slot on.
    stats.shed++;
    throw new OverloadedError(key);
  }

  function releaseSlot(): void {
    const next = queue.shift();
    if (next !== undefined) next();
    else free++;
  }

  function parse(raw: string | null): Envelope | undefined {
    if (raw === null) return undefined;
    const env = JSON.parse(raw) as Envelope;
    return env.v === ENVELOPE_VERSION ? env : undefined;
  }

  function shouldRefreshEarly(env: Envelope): boolean {
    const r = 1 - random();
    return now() - env.delta * beta * Math.log(r) >= env.expiry;
  }

  async function load(key: string, query: () => Promise<string>): Promise<string> {
    await acquireSlot(key);
    let value: string;
    let delta: number;
    try {
      const start = monotonic();
      stats.loads++;
      value = await query();
      delta = monotonic() - start;
    } finally {
      releaseSlot();
    }
    const ttl = Math.trunc(ttlMs * (1 - jitter + 2 * jitter * random()));
    const env: Envelope = { v: ENVELOPE_VERSION, value, delta, expiry: now() + ttl };
    await redis.send(["SET", key, JSON.stringify(env), "PX", ttl + hardStaleMs]);
    return value;
  }

  async function refresh(key: string, env: Envelope | undefined, query: () => Promise<string>): Promise<Refreshed> {
    const lockKey = `lock:${key}`;
    const mine = token(random);
    if ((await redis.send(["SET", lockKey, mine, "NX", "PX", lockTtlMs])) !== null) {
      stats.leasesWon++;
      try {
        return { value: await load(key, query), served: "loaded" };
      } finally {
        await RELEASE.run(redis, [lockKey], [mine]).catch(() => {});
      }
    }
    if (env !== undefined) return { value: env.value, served: now() >= env.expiry ? "stale" : "copy" };
    stats.waits++;
    let delay = 50;
    for (let i = 0; i < attempts; i++) {
      await sleep(delay);
      const again = parse((await redis.send(["GET", key])) as string | null);
      if (again !== undefined) return { value: again.value, served: "waited" };
      delay = Math.min(delay * 2, 500);
    }
    stats.timeouts++;
    throw new TimeoutError(`recipe 002: ${key} not refreshed within backoff budget`, 1250);
  }

  function flight(key: string, fetch: () => Promise<Refreshed>): Promise<Refreshed> {
    let task = inflight.get(key);
    if (task === undefined) {
      task = fetch().finally(() => inflight.delete(key));
      task.catch(() => {});
      inflight.set(key, task);
    } else stats.coalesced++;
    let late = false;
    const deadline = sleep(flightTimeoutMs).then(() => {
      late = true;
      throw new TimeoutError(`recipe 002: ${key}: single flight wait over ${flightTimeoutMs} ms`, flightTimeoutMs);
    });
    deadline.catch(() => {});
    return Promise.race([task, deadline]).catch((error) => {
      if (late) stats.timeouts++;
      throw error;
    });
  }

  return {
    name: "recipe 002",
    stats: () => ({ ...stats }),
    async get(key, query) {
      const env = parse((await redis.send(["GET", key])) as string | null);
      if (env !== undefined && !shouldRefreshEarly(env)) {
        stats.hits++;
        return env.value;
      }
      if (env === undefined || now() >= env.expiry) stats.misses++;
      else stats.earlyRefreshes++;
      const got = await flight(key, () => refresh(key, env, query));
      // Every caller the flight answers with a copy counts, not just its leader.
      if (got.served === "stale") stats.stale++;
      else if (got.served === "copy") stats.hits++;
      return got.value;
    },
    async warmup(keys, query) {
      const results = await Promise.allSettled(keys.map((k) => load(k, () => query(k))));
      return results.filter((r) => r.status === "fulfilled").length;
    },
  };
}
