/**
 * What the three articles' recipes share in the lab: one `get(key, compute)`
 * per recipe instance (one instance stands for one app process), the
 * herdless counters it keeps (so the lab's invariants and columns apply to
 * it unchanged), and the clocks it is given, so tests can fake them.
 *
 * @module
 */
import { setTimeout } from "node:timers";
import type { CacheStats } from "../../../mod.ts";
import { type RedisLike, Script } from "../../../resp/mod.ts";

/** The environment every recipe takes: the connection and its clocks. */
export interface RecipeEnv {
  /** Our own client, or a counting wrapper of it. */
  redis: RedisLike;
  /** The configured TTL, in ms (the articles speak seconds; the lab's TTLs are below one). */
  ttlMs: number;
  /** The process's wall clock, ms (the articles' `time.time()`): the lab skews it. @default {Date.now} */
  now?: () => number;
  /** A monotonic clock for durations (002's `time.monotonic()`). @default {() => performance.now()} */
  monotonic?: () => number;
  /** How the recipe waits: a poll interval, a backoff, a deadline. Tests hold it. @default {a real timer} */
  sleep?: (ms: number) => Promise<void>;
  /** [0, 1), the articles' `random.random()`. @default {Math.random} */
  random?: () => number;
}

/** One recipe instance: the articles' `get_or_compute`, `get_or_load`, `get`. */
export interface Recipe {
  /** The row's label, e.g. `recipe 001`. */
  readonly name: string;
  /** Read `key`, or build it with `compute` as the article does. */
  get(key: string, compute: () => Promise<string>): Promise<string>;
  /** The counters, herdless' names (hits, misses, stale, loads, waits...). */
  stats(): CacheStats;
}

/** The environment with its defaults filled in. */
export interface Clocks {
  now: () => number;
  monotonic: () => number;
  sleep: (ms: number) => Promise<void>;
  random: () => number;
}

/** Defaults for what `env` leaves out. */
export function clocks(env: RecipeEnv): Clocks {
  return {
    now: env.now ?? Date.now,
    monotonic: env.monotonic ?? (() => performance.now()),
    // Unref'd: a deadline still pending when its call has settled must not hold a process open.
    sleep: env.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms).unref())),
    random: env.random ?? Math.random,
  };
}

/**
 * Zeroed counters. Written out here rather than taken from the engine, whose
 * counters are not part of the package's entries; typed as `CacheStats`, so
 * a counter the engine adds fails to compile here until it is added.
 */
export function counters(): CacheStats {
  return {
    hits: 0,
    misses: 0,
    stale: 0,
    earlyRefreshes: 0,
    loads: 0,
    loadErrors: 0,
    leasesWon: 0,
    waits: 0,
    lateRejected: 0,
    coalesced: 0,
    shed: 0,
    timeouts: 0,
    decodeErrors: 0,
    refreshesDropped: 0,
    refreshErrors: 0,
    eventErrors: 0,
    nearHits: 0,
    nearEntries: 0,
    nearInvalidations: 0,
    invalidationMode: 0,
    peeks: 0,
    sets: 0,
    degraded: 0,
    skips: 0,
    softTimeouts: 0,
    notModified: 0,
    invalid: 0,
  };
}

/**
 * The lock release all three articles write the same way: delete the lock
 * only while it still holds this owner's token (a lock that expired and was
 * taken by another owner is left to it).
 */
export const RELEASE = new Script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`);

/** A uuid-like random token (the articles' `uuid4().hex`, `token_hex(16)`, `str(random())`). */
export function token(random: () => number): string {
  let t = "";
  for (let i = 0; i < 4; i++) t += Math.floor(random() * 2 ** 32).toString(16).padStart(8, "0");
  return t;
}
