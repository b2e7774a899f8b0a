/**
 * The cache: `pipeline()` composes strategies into a `Cache` that keeps one
 * expired hot key from becoming a herd on the origin. What a strategy author
 * needs besides has its own entry, `herdless/strategy` (`strategy.ts`).
 *
 * @example Coalesce in-process, one owner across processes, jittered TTLs
 * ```ts
 * import { coalesce, connect, jitter, lease, pipeline } from "@herdless/herdless";
 * const redis = await connect({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", resp: 3 });
 * const cache = pipeline({ redis, ttlMs: 60_000 }, coalesce(), lease(), jitter({ spreadMs: 6_000 }));
 * console.log(await cache.get(["greeting", "en"], () => "hello")); // "hello"
 * await cache.close();
 * await redis.close();
 * ```
 *
 * @module
 */
export { cacheStatus, type CacheStatusOptions, pipeline } from "./pipeline/mod.ts";
export { prometheus, type PrometheusOptions, type StatsSource } from "./pipeline/mod.ts";
export type { Cache, GetTraceContext, LoadMany, WarmReport } from "./cache.ts";
export type { CloseOptions, GetOptions, PipelineOptions, SetOptions, WarmOptions } from "./options.ts";
export type {
  BatchLoaderContext,
  CacheResult,
  Identity,
  InvalidationMode,
  Keys,
  Loader,
  LoaderContext,
  PreviousValue,
  PushCapable,
  WakeupSource,
} from "./types.ts";
export type { CacheEvent, CacheEventBody, CacheEventMessage, CacheStats } from "./events.ts";
export type { Entry, Strategy } from "./deprecated.ts";
export { near, type NearOptions, type NearStrategy } from "./near.ts";
export { coalesce, type CoalesceStrategy } from "./coalesce.ts";
export { lease, type LeaseOptions, type LeaseStrategy } from "./lease.ts";
export { jitter, type JitterOptions, type JitterStrategy } from "./jitter.ts";
export { xfetch, type XfetchOptions, type XfetchStrategy } from "./xfetch.ts";
export { swr, type SwrOptions, type SwrStrategy } from "./swr.ts";
export { limit, type LimitOptions, type LimitStrategy } from "./limit.ts";
export {
  ClosedError,
  CodecError,
  type CodecErrorOptions,
  isClosedError,
  isCodecError,
  isOverloadedError,
  isSchemaError,
  isTimeoutError,
  OverloadedError,
  SchemaError,
  type SchemaErrorOptions,
  TimeoutError,
} from "./errors.ts";
export type { StandardSchemaIssue, StandardSchemaProps, StandardSchemaResult, StandardSchemaV1 } from "./schema.ts";
export { type Codec, type CodecOption, compressed, type CompressedOptions } from "./codec/mod.ts";
