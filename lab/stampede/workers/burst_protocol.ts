/**
 * The protocol between the cold-burst scenario and its worker processes:
 * the command for one row, the report that comes back, and the Redis keys of
 * the barrier and of the origin's counters.
 *
 * @module
 */
import type { CacheStats } from "../../../mod.ts";
import type { LayerSettings } from "../rows/layers.ts";
import { barrierKeys } from "./children.ts";
import type { RecipeId, RecipeSettings } from "../rows/sets.ts";

/** What the parent asks for one row. */
export interface BurstCommand {
  row: number;
  namespace: string;
  layers: LayerSettings;
  ttlMs: number;
  originMs: number;
  requestsPerPool: number;
  timeoutMs: number;
  /** Run this article's recipe instead of herdless' layer row. */
  recipe?: RecipeId;
  recipeSettings?: RecipeSettings;
}

/** What a worker reports for one row. */
export interface BurstReport {
  id: string;
  latencies: number[];
  ok: number;
  errors: number;
  timeouts: number;
  errorSamples: string[];
  /** ms after this worker's release at which each origin call started. */
  offsets: number[];
  stats: CacheStats;
  /** Redis commands the pools sent for the burst. */
  commands: number;
}

/** The Redis keys of one row's barrier and origin counters. */
export function burstKeys(namespace: string) {
  return {
    ...barrierKeys(namespace),
    calls: `${namespace}:origin:calls`,
    inflight: `${namespace}:origin:inflight`,
    peak: `${namespace}:origin:peak`,
  };
}
