/**
 * `pipeline()`: the cache that runs strategies, and what it exposes.
 *
 * @module
 */
export { pipeline } from "./pipeline.ts";
export {
  cacheStatus,
  type CacheStatusOptions,
  prometheus,
  type PrometheusOptions,
  type StatsSource,
} from "./report/mod.ts";
