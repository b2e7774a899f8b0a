/** fromNodeRedis() against node-redis 4, 5 (RESP2 and RESP3) and 6 and a real redis-server. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Buffer } from "node:buffer";
import { createClient, RESP_TYPES } from "redis5";
import { fromNodeRedis } from "../../resp/adapters/node_redis.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { useRedis } from "../support/fixture.ts";
import { rejects } from "../support/assert.ts";
import { contract } from "./_contract.ts";
import { NODE_REDIS } from "./_flavors.ts";

contract("fromNodeRedis()", NODE_REDIS);

const Options = suite("fromNodeRedis() and the client's options");
const db = useRedis(Options, { clients: 0 });

Options("refuses what is not a node-redis client, naming what it needs", async () => {
  const message =
    "Cannot create the node-redis adapter: 'client' must be a node-redis client or cluster (with sendCommand())";
  await rejects(() => fromNodeRedis(undefined as never), TypeError, message);
  await rejects(() => fromNodeRedis({ call() {} } as never), TypeError, message);
});

Options("a client made with withTypeMapping() still answers with strings unless bytes are asked for", async () => {
  const client = await createClient({ url: db.url, RESP: 3 }).connect();
  try {
    const mapped = client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer, [RESP_TYPES.MAP]: Array });
    const redis = fromNodeRedis(mapped);
    await redis.send(["SET", "k", "v"]);
    assert.is(await redis.send(["GET", "k"]), "v");
    assert.ok((await redis.send(["GET", "k"], { buffers: true })) instanceof Uint8Array);
    await redis.send(["HSET", "h", "f", "1"]);
    assert.equal({ ...(await redis.send(["HGETALL", "h"]) as object) }, { f: "1" });
    const cache = pipeline<string>({ redis, ttlMs: 5000, namespace: "mapped" });
    assert.is(await cache.get("x", () => "loaded"), "loaded");
    assert.is(await cache.get("x", () => "never"), "loaded");
    await cache.close();
  } finally {
    await client.close();
  }
});

Options.run();
