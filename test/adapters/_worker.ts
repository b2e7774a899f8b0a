/**
 * One OS process of the cross-process lease test (run by processes.test.ts,
 * not a test file itself). Arguments: <redis url> <namespace> <worker id>
 * <client kind> <workers in the race>, the kind being `ioredis`,
 * `node-redis`, `bun` (an adapter over that client) or `herdless` (our own
 * RESP3 client).
 *
 * It connects, reports ready, blocks on its own Redis list until the parent
 * releases it, then fires 10 concurrent gets for one key. Its first caller
 * to win the lease or wait on it reports so (`<id>:lease-won` or
 * `<id>:wait`). The origin is a Redis counter (INCR), so calls are counted
 * across processes, and it answers only once every worker has a caller in
 * the race. Prints one JSON line: the values it got and its stats.
 */
import process from "node:process";
import { Redis } from "ioredis5";
import { createClient } from "redis5";
import { fromIoredis } from "../../resp/adapters/ioredis.ts";
import { fromNodeRedis } from "../../resp/adapters/node_redis.ts";
import { fromBunRedis } from "../../resp/adapters/bun_redis.ts";
import type { BunRedisClient } from "../../resp/adapters/bun_redis.ts";
import { connect } from "../../resp/client.ts";
import type { RedisLike } from "../../resp/types.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { stampedeWorker } from "../support/processes.ts";

const [url, namespace, id, kind, total] = process.argv.slice(-5) as [string, string, string, string, string];

async function open(): Promise<{ redis: RedisLike; close(): Promise<unknown> }> {
  switch (kind) {
    case "ioredis": {
      const client = new Redis(url, { lazyConnect: true });
      await client.connect();
      return { redis: fromIoredis(client), close: () => client.quit() };
    }
    case "node-redis": {
      const client = await createClient({ url }).connect();
      return { redis: fromNodeRedis(client), close: () => client.close() };
    }
    case "bun": {
      const bun = "bun";
      const { RedisClient } = await import(bun) as {
        RedisClient: new (url: string) => BunRedisClient & { connect(): Promise<void>; close(): void };
      };
      const client = new RedisClient(url);
      await client.connect();
      return { redis: fromBunRedis(client), close: () => Promise.resolve(client.close()) };
    }
    case "herdless": {
      const client = await connect({ url, resp: 3 });
      return { redis: client, close: () => client.close() };
    }
    default:
      throw new Error(`unknown client kind ${kind}`);
  }
}

const { redis, close } = await open();
const control = await connect({ url });
const { onEvent, load } = stampedeWorker(control, namespace, id, Number(total));
const cache = pipeline(
  { redis, ttlMs: 30_000, namespace, onEvent },
  coalesce(),
  lease({ leaseMs: 10_000, waitMs: 20_000 }),
);

await control.send(["RPUSH", `${namespace}:ready`, id]);
await control.send(["BLPOP", `${namespace}:go:${id}`, 30]);
const values = await Promise.all(Array.from({ length: 10 }, () => cache.get("hot", load)));
process.stdout.write(`${JSON.stringify({ id, kind, values, stats: cache.stats() })}\n`);
await cache.close();
await close();
await control.close();
process.exit(0);
