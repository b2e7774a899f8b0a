// ioredis 5 and 6, `Redis` and `Cluster`, as a user writes them: no cast
// anywhere. (The named `Redis` export: under "module": "NodeNext" ioredis'
// default export is the CommonJS module object, not constructable: TS2351.)
import { Cluster as Cluster5, Redis as Redis5 } from "ioredis5";
import { Cluster as Cluster6, Redis as Redis6 } from "ioredis6";
import { coalesce, fromIoredis, lease, pipeline, type RedisLike, Script } from "../../../mod.ts";

const clients = [
  new Redis5({ lazyConnect: true }),
  new Redis5("redis://127.0.0.1:6379", { lazyConnect: true, keyPrefix: "app:" }),
  new Cluster5([{ host: "127.0.0.1", port: 7000 }], { lazyConnect: true }),
  new Redis6({ lazyConnect: true }),
  new Redis6("redis://127.0.0.1:6379", { lazyConnect: true, protocol: 3, replyMapping: "resp3" }),
  new Cluster6([{ host: "127.0.0.1", port: 7000 }], { lazyConnect: true }),
] as const;

export async function use(): Promise<void> {
  const r5: RedisLike = fromIoredis(new Redis5({ lazyConnect: true }));
  const c6: RedisLike = fromIoredis(new Cluster6([{ host: "127.0.0.1", port: 7000 }]));
  const cache = pipeline<string>({ redis: fromIoredis(new Redis6()), ttlMs: 1000 }, coalesce(), lease());
  const value: string = await cache.get("k", () => "v", { timeoutMs: 100 });
  const reply = await r5.send(["SET", "k", new Uint8Array([1]), "PX", 100], { timeoutMs: 50, buffers: true });
  await new Script("return 1").run(c6, ["k"], [1]);
  for (const client of clients) await fromIoredis(client).send(["PING"], { signal: AbortSignal.timeout(10) });
  void [value, reply];
}
