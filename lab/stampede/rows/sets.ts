/**
 * What a row of a steady-load table runs: one of herdless' layer sets, or
 * one of the seed articles' recipes. Either way a row is a cache per pool
 * (one pool stands for one app process) behind the same `get(key, loader,
 * timeoutMs)`, so the load, the origin and the counters are the same for
 * every row.
 *
 * @module
 */
import type { RedisLike } from "../../../resp/mod.ts";
import { type CacheStats, pipeline } from "../../../mod.ts";
import type { Strategy } from "../../../strategies/strategy.ts";
import { describeRow, type LayerSettings, rowLabel, ROWS, strategiesFor } from "./layers.ts";
import { leasePublishRecipe } from "../recipes/lease_publish.ts";
import { layeredRecipe } from "../recipes/layered.ts";
import { lockPollRecipe } from "../recipes/lock_poll.ts";
import type { Recipe } from "../recipes/types.ts";

/** One pool's cache of a row. */
export interface SetCache {
  get(key: number, loader: () => Promise<string>, timeoutMs: number): Promise<string>;
  stats(): CacheStats;
  close(): Promise<void>;
}

/** How a row's caches are built. */
export interface LabSet {
  /** The row's label, e.g. `+ lease` or `recipe 001`. */
  readonly label: string;
  /** What it holds, for the JSON. */
  readonly strategies: string;
  /**
   * The cache of pool `pool` over `redis`, keys under `namespace`; `warm`: the
   * cache that fills the keys before the clock starts (no limits, patient).
   */
  open(redis: RedisLike, pool: number, namespace: string, ttlMs: number, warm: boolean): SetCache;
}

/** What a herdless row may change besides its layers. */
export interface LayerSetOptions {
  /** @default {the layer row's label: `none`, `coalesce`, `+ lease`...} */
  label?: string;
  /** How far pool `pool`'s clock is off, ms. @default {0} */
  skewMs?: (pool: number) => number;
  /** The pipeline's `onRedisDown`. @default {the pipeline's: "error"} */
  onRedisDown?: "error" | "local";
}

/** Herdless' row `row` of the layer table (0: none, ROWS - 1: the full pipeline). */
export function layerSet(row: number, layers: LayerSettings, o: LayerSetOptions = {}): LabSet {
  return {
    label: o.label ?? rowLabel(row),
    strategies: describeRow(row) + (o.onRedisDown === undefined ? "" : `, onRedisDown ${o.onRedisDown}`),
    open(redis, pool, namespace, ttlMs, warm) {
      // herdless reads no wall clock (freshness is the server's PTTL); the nearest thing to
      // a skewed clock it has is its monotonic one, offset the same way.
      const skew = o.skewMs?.(pool) ?? 0;
      const now = skew === 0 ? {} : { now: () => performance.now() + skew };
      const down = o.onRedisDown === undefined ? {} : { onRedisDown: o.onRedisDown };
      const cache = pipeline<string>(
        { redis, ttlMs, namespace, ...now, ...down, ...(warm ? { commandTimeoutMs: 10_000 } : {}) },
        ...strategiesFor(row, layers, warm ? ["limit"] : []),
      );
      return {
        get: (key, loader, timeoutMs) => cache.get(["k", key], loader, { timeoutMs }),
        stats: () => cache.stats(),
        close: () => cache.close(),
      };
    },
  };
}

/** The full pipeline, labelled as herdless in the recipes' tables. */
export function herdlessSet(layers: LayerSettings, skewMs?: (pool: number) => number): LabSet {
  return layerSet(ROWS - 1, layers, { label: "herdless (full)", ...(skewMs === undefined ? {} : { skewMs }) });
}

/** Which article's recipe. */
export type RecipeId = "001" | "000" | "002";

/** What the lab varies in a recipe: the TTLs of the scenario, and what its story does to the world. */
export interface RecipeSettings {
  /** The stale window herdless' swr gets (001's stale grace, 002's hard TTL beyond the soft one). */
  staleMs: number;
  /** Every lock and lease this long instead of the article's (the paused-owner story); absent: the article's. */
  lockMs?: number;
  /** How far pool `pool`'s wall clock is off, ms (the clock-skew story). @default {0} */
  skewMs?: (pool: number) => number;
}

const TITLES: Record<RecipeId, string> = {
  "001": "lock + XFetch + jitter +-10% + poll 50 x 50 ms, then compute",
  "000": "lease + checked publish + recheck + poll 10-25 ms, wait 2 s",
  "002": "single flight + lock + XFetch envelope + jitter +-15% + 20 slots + warm-up",
};

/** Build one recipe instance (one per pool: a pool is a process). */
export function makeRecipe(
  id: RecipeId,
  redis: RedisLike,
  ttlMs: number,
  s: RecipeSettings,
  pool: number,
  warm = false,
): Recipe {
  const skew = s.skewMs?.(pool) ?? 0;
  const now = skew === 0 ? Date.now : () => Date.now() + skew;
  const lock = s.lockMs === undefined ? {} : s.lockMs;
  switch (id) {
    case "001":
      return lockPollRecipe({
        redis,
        ttlMs,
        now,
        staleGraceMs: s.staleMs,
        ...(typeof lock === "number" ? { lockTtlMs: lock } : {}),
      });
    case "000":
      return leasePublishRecipe({ redis, ttlMs, now, ...(typeof lock === "number" ? { leaseMs: lock } : {}) });
    case "002":
      return layeredRecipe({
        redis,
        ttlMs,
        now,
        hardStaleMs: s.staleMs,
        // Warm-up is not what is measured: the filling instance is not limited (herdless' warm-up skips limit() too).
        ...(warm ? { slots: Number.MAX_SAFE_INTEGER } : {}),
        ...(typeof lock === "number" ? { lockTtlMs: lock } : {}),
      });
  }
}

/** A recipe as a row. */
export function recipeSet(id: RecipeId, s: RecipeSettings): LabSet {
  return {
    label: `recipe ${id}`,
    strategies: TITLES[id],
    open(redis, pool, namespace, ttlMs, warm) {
      const recipe = makeRecipe(id, redis, ttlMs, s, pool, warm);
      return {
        get: (key, loader) => recipe.get(`${namespace}:k:${key}`, loader),
        stats: () => recipe.stats(),
        close: () => Promise.resolve(),
      };
    },
  };
}

/** The recipes' rows: herdless first, then the three articles. */
export function recipeRows(layers: LayerSettings, s: RecipeSettings): LabSet[] {
  return [herdlessSet(layers, s.skewMs), recipeSet("001", s), recipeSet("000", s), recipeSet("002", s)];
}

/** Any list of herdless strategies as a row (fresh objects per cache: a strategy joins one cache only). */
export function strategySet(label: string, strategies: string, make: () => Strategy[]): LabSet {
  return {
    label,
    strategies,
    open(redis, _pool, namespace, ttlMs, warm) {
      const cache = pipeline<string>(
        { redis, ttlMs, namespace, ...(warm ? { commandTimeoutMs: 10_000 } : {}) },
        ...make(),
      );
      return {
        get: (key, loader, timeoutMs) => cache.get(["k", key], loader, { timeoutMs }),
        stats: () => cache.stats(),
        close: () => cache.close(),
      };
    },
  };
}
