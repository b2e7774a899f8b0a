/**
 * Bring your own client: ioredis, node-redis or Bun's `RedisClient` as a
 * {@linkcode RedisLike}, so a cache (or a `Script`) runs over connections an
 * application already has. Structural types only: herdless depends on none
 * of these packages.
 *
 * @example A cache over an ioredis client
 * ```ts
 * import { Redis } from "ioredis";
 * import { coalesce, fromIoredis, lease, pipeline } from "@herdless/herdless";
 *
 * const client = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
 * const cache = pipeline<number>({ redis: fromIoredis(client), ttlMs: 30_000, namespace: "adapters" }, coalesce(), lease());
 * console.log(await cache.get("answer", () => 42)); // 42
 * await cache.close();
 * client.disconnect();
 * ```
 *
 * @module
 */
export { fromIoredis, type IoredisClient } from "./ioredis.ts";
export {
  fromNodeRedis,
  type NodeRedisClient,
  type NodeRedisCluster,
  type NodeRedisCommandOptions,
} from "./node_redis.ts";
export { type BunRedisClient, fromBunRedis } from "./bun_redis.ts";
