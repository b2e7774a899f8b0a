/**
 * herdless stops cache stampedes on Redis: when a hot key expires under load,
 * exactly one caller refreshes it while the rest wait briefly, get a slightly
 * stale value, or never see the expiry at all.
 *
 * @example A cache that never stampedes
 * ```ts
 * import { coalesce, connect, jitter, lease, pipeline, swr, xfetch } from "@herdless/herdless";
 * const redis = await connect({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", resp: 3 });
 * const cache = pipeline<string>(
 *   { redis, ttlMs: 60_000, namespace: "docs" },
 *   swr({ staleMs: 30_000 }), xfetch(), coalesce(), lease(), jitter({ spreadMs: 5_000 }),
 * );
 * console.log(await cache.get(["page", "home"], () => "<h1>hello</h1>"));
 * await cache.close();
 * await redis.close();
 * ```
 *
 * @module
 */
export * from "./strategies/mod.ts";
export {
  type Arg,
  ClusterClient,
  type ClusterOptions,
  type ClusterStats,
  type CommandTraceContext,
  connect,
  connectCluster,
  ConnectionError,
  type ConnectionEvent,
  type ConnectOptions,
  connectSentinel,
  CrossSlotError,
  isConnectionError,
  isCrossSlotError,
  isProtocolError,
  isRedisReplyError,
  keySlot,
  parseRedisUrl,
  ProtocolError,
  type PushListener,
  type ReconnectOptions,
  RedisClient,
  type RedisLike,
  RedisReplyError,
  type RedisUrl,
  type Reply,
  type ReplyMap,
  Script,
  type SendOptions,
  SentinelClient,
  type SentinelEvent,
  type SentinelOptions,
  type TrackingClient,
  type TrackingListener,
} from "./resp/mod.ts";
export {
  type BunRedisClient,
  fromBunRedis,
  fromIoredis,
  fromNodeRedis,
  type IoredisClient,
  type NodeRedisClient,
  type NodeRedisCluster,
  type NodeRedisCommandOptions,
} from "./resp/adapters/mod.ts";
