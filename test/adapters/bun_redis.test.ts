/**
 * fromBunRedis() against Bun's built-in RedisClient and a real redis-server.
 * The client exists only under Bun: under Node and Deno this suite is not
 * registered at all (it is not counted, passed or skipped) and a line says so.
 */
import process from "node:process";
import { type BunRedisClient, fromBunRedis } from "../../resp/adapters/bun_redis.ts";
import { contract } from "./_contract.ts";

interface BunClient extends BunRedisClient {
  connect(): Promise<void>;
  close(): void;
}

if ((globalThis as { Bun?: unknown }).Bun === undefined) {
  process.stdout.write(
    "\nfromBunRedis(): not registered here; Bun's RedisClient exists only under Bun " +
      "(node_modules/.bin/bun test/support/run.ts adapters runs it)\n",
  );
} else {
  // A computed specifier: Node's and Deno's loaders must never see "bun".
  const bun = "bun";
  const { RedisClient } = await import(bun) as { RedisClient: new (url: string) => BunClient };
  contract("fromBunRedis()", [
    {
      name: "Bun RedisClient",
      mapsAsObjects: true,
      buffersEverywhere: false,
      async open(url) {
        const client = new RedisClient(url);
        await client.connect();
        return { redis: fromBunRedis(client), close: () => Promise.resolve(client.close()) };
      },
    },
  ]);
}
