/**
 * `pipeline()`: the cache that runs strategies, and what it exposes.
 *
 * @module
 */
export type {
  Cache,
  GetOptions,
  GetTraceContext,
  LoadMany,
  PipelineOptions,
  SetOptions,
  WarmOptions,
  WarmReport,
} from "./cache_types.ts";
export { pipeline } from "./pipeline.ts";
export type { CacheResult } from "./result.ts";
export type { BatchLoaderContext } from "./loader_context.ts";
export { prometheus, type PrometheusOptions, type StatsSource } from "./prometheus.ts";
