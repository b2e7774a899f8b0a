// Bun's RedisClient, the default `redis` client and a new one: no cast.
import { redis, RedisClient } from "bun";
import { coalesce, fromBunRedis, lease, pipeline, type RedisLike } from "../../../mod.ts";

export async function use(): Promise<void> {
  const mine: RedisLike = fromBunRedis(new RedisClient("redis://127.0.0.1:6379"));
  const shared: RedisLike = fromBunRedis(redis);
  const cache = pipeline<Uint8Array>({ redis: mine, ttlMs: 1000, codec: "bytes" }, coalesce(), lease());
  const value: Uint8Array = await cache.get("k", () => new Uint8Array([1, 2]));
  await shared.send(["GET", "k"], { buffers: true, timeoutMs: 100 });
  void value;
}
