// node-redis 4, 5 and 6: createClient and createCluster, RESP2 and RESP3,
// modules and a type mapping, as a user writes them: no cast anywhere.
import { createClient as createClient4, createCluster as createCluster4 } from "redis4";
import { createClient as createClient5, createCluster as createCluster5, RESP_TYPES } from "redis5";
import { createClient as createClient6, createCluster as createCluster6 } from "redis6";
import { coalesce, fromNodeRedis, lease, pipeline, type RedisLike, Script } from "../../../mod.ts";

export async function use(): Promise<void> {
  const v4 = await createClient4({ url: "redis://127.0.0.1:6379" }).connect();
  const v4cluster = createCluster4({ rootNodes: [{ url: "redis://127.0.0.1:7000" }] });
  const v5 = await createClient5({ url: "redis://127.0.0.1:6379" }).connect();
  const v5resp3 = createClient5({ RESP: 3 });
  const v5mapped = v5.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
  const v5cluster = createCluster5({ rootNodes: [{ url: "redis://127.0.0.1:7000" }], RESP: 3 });
  const v6 = createClient6();
  const v6cluster = createCluster6({ rootNodes: [{ url: "redis://127.0.0.1:7000" }] });

  const adapters: RedisLike[] = [
    fromNodeRedis(v4),
    fromNodeRedis(v4cluster),
    fromNodeRedis(v5),
    fromNodeRedis(v5resp3),
    fromNodeRedis(v5mapped),
    fromNodeRedis(v5cluster),
    fromNodeRedis(v6),
    fromNodeRedis(v6cluster),
  ];
  const cache = pipeline<string>({ redis: fromNodeRedis(v5), ttlMs: 1000 }, coalesce(), lease());
  const value: string = await cache.get("k", () => "v");
  for (const redis of adapters) {
    await redis.send(["GET", "k"], { buffers: true, timeoutMs: 100, signal: AbortSignal.timeout(50) });
    await new Script("return 1").run(redis, ["k"], []);
  }
  void value;
}
