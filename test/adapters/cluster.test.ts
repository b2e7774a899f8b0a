/**
 * The adapters over cluster clients (ioredis `Cluster`, node-redis
 * `createCluster`) against a real 3-primary Redis Cluster: every command
 * reaches the node owning its key, scripts survive SCRIPT FLUSH on every
 * node, and a cold burst through two caches costs one origin call.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connectCluster } from "../../resp/cluster/client.ts";
import { isRedisReplyError, RedisReplyError } from "../../resp/errors.ts";
import { Script } from "../../resp/script.ts";
import { keySlot } from "../../resp/cluster/slot.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { sharedCluster } from "../support/fixture.ts";
import { rejects } from "../support/assert.ts";
import { events, origin } from "../support/strategies.ts";
import { deferred } from "../support/wait.ts";
import { CLUSTERS, type Opened } from "./_flavors.ts";

const Cluster = suite("adapters over cluster clients");

const shared = sharedCluster({
  start: { primaries: 3, replicas: 0 },
  prefix: "cadapt",
  open: async (cluster) => ({ control: await connectCluster([...cluster.seeds]) }),
  close: ({ control }) => control.destroy(),
});
shared.use(Cluster, { last: true });

async function using(flavor: (typeof CLUSTERS)[number], body: (a: Opened, b: Opened) => Promise<void>): Promise<void> {
  const a = await flavor.open(shared.current.cluster.seeds);
  const b = await flavor.open(shared.current.cluster.seeds);
  try {
    await body(a, b);
  } finally {
    await Promise.allSettled([a.close(), b.close()]);
  }
}

for (const flavor of CLUSTERS) {
  Cluster(`${flavor.name}: each command reaches the node owning its key, scripts' keys included`, async () => {
    await using(flavor, async ({ redis }) => {
      const k = shared.ns();
      const keys = Array.from({ length: 24 }, (_, i) => `${k}:${i}`);
      const owners = keys.map((key) => shared.current.cluster.ownerOf(keySlot(key)));
      assert.is(new Set(owners).size, 3, "the keys span every primary");
      // A command sent to the wrong node would still succeed (the clients
      // follow MOVED), so the nodes' own counts say where each one landed.
      for (const p of shared.current.cluster.primaries()) shared.current.cluster.cli(p.port, "CONFIG", "RESETSTAT");
      for (const key of keys) assert.is(await redis.send(["SET", key, key, "PX", 60_000]), "OK");
      for (const key of keys) assert.is(await shared.current.control.send(["GET", key]), key);
      const incr = new Script("return redis.call('INCRBY', KEYS[1], ARGV[1])");
      for (const key of keys) assert.is(await incr.run(redis, [`{${key}}:n`], [3]), 3);
      for (const p of shared.current.cluster.primaries()) {
        const stats = shared.current.cluster.cli(p.port, "INFO", "commandstats");
        const stat = (command: string, field: string) =>
          Number(stats.match(new RegExp(`cmdstat_${command}:[^\\r\\n]*?\\b${field}=(\\d+)`))?.[1] ?? 0);
        const owned = owners.filter((o) => o === p.port).length;
        assert.is(stat("set", "calls"), owned, `SETs on the primary on ${p.port}`);
        // On a node that never saw this script, its first EVALSHA fails
        // (NOSCRIPT) and Script.run falls back to EVAL: count what ran.
        const ran = stat("eval", "calls") + stat("evalsha", "calls") - stat("evalsha", "failed_calls");
        assert.is(ran, owned, `scripts on the primary on ${p.port}`);
        const refused = ["set", "eval", "evalsha"].reduce((sum, c) => sum + stat(c, "rejected_calls"), 0);
        assert.is(refused, 0, `no command was redirected by the primary on ${p.port}`);
      }
      assert.is(await redis.send(["EXISTS", keys[5]!]), 1);
      assert.is(await redis.send(["DEL", keys[5]!]), 1);
      assert.is(await redis.send(["PUBLISH", `${k}:channel`, "x"]), 0);
      assert.equal(await redis.send(["TIME"]).then((t) => Array.isArray(t) && t.length), 2);
      const e = await rejects(() => redis.send(["HGET", keys[0]!, "f"]), RedisReplyError, /^WRONGTYPE/);
      assert.ok(isRedisReplyError(e));
    });
  });

  Cluster(`${flavor.name}: Script.run recovers from SCRIPT FLUSH on every node`, async () => {
    await using(flavor, async ({ redis }) => {
      const k = shared.ns();
      const script = new Script(`return redis.call('INCRBY', KEYS[1], ARGV[1]) -- ${k}`);
      const keys = [`${k}:a`, `${k}:b`, `${k}:c`, `${k}:d`];
      for (const key of keys) assert.is(await script.run(redis, [key], [1]), 1);
      for (const p of shared.current.cluster.primaries()) shared.current.cluster.cli(p.port, "SCRIPT", "FLUSH");
      for (const key of keys) assert.is(await script.run(redis, [key], [2]), 3);
    });
  });

  Cluster(`${flavor.name}: a cold burst of 50 gets through two caches costs 1 origin call`, async () => {
    await using(flavor, async (a, b) => {
      const namespace = shared.ns();
      const ev = events();
      const one = pipeline({ redis: a.redis, ttlMs: 5000, namespace, onEvent: ev.onEvent }, coalesce(), lease());
      const two = pipeline({ redis: b.redis, ttlMs: 5000, namespace, onEvent: ev.onEvent }, coalesce(), lease());
      const hold = deferred();
      const o = origin((call) => `v${call}`);
      o.hold = hold.promise;
      const calls = Array.from({ length: 50 }, (_, i) => (i % 2 ? one : two).get("hot", o.load));
      await ev.reach(["coalesced", "wait"], 49);
      hold.resolve();
      assert.ok((await Promise.all(calls)).every((v) => v === "v1"));
      assert.is(o.calls, 1);
      await one.invalidate("hot");
      assert.is(await two.get("hot", o.load), "v2");
      await Promise.all([one.close(), two.close()]);
    });
  });
}

Cluster.run();
