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
} from "./cache.ts";
export { pipeline } from "./pipeline.ts";
export { prometheus, type PrometheusOptions, type StatsSource } from "./prometheus.ts";
