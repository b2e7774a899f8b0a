/**
 * What a cache reports: its counters and events, the labels that name
 * identities in them, the Prometheus text, and what one `getEntry` call
 * reports with its `Cache-Status`.
 *
 * @module
 */
export { cacheStatus, type CacheStatusOptions } from "./cache_status.ts";
export { Labels } from "./labels.ts";
export { prometheus, type PrometheusOptions, type StatsSource } from "./prometheus.ts";
export { ResultReport } from "./result.ts";
export { type KeyEvent, Stats } from "./stats.ts";
