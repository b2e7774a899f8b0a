/**
 * `onRedisDown: "local"` on a Redis Cluster through herdless' ClusterClient:
 * the outage is kept per node, so a silent primary sends only the keys of its
 * slots to the local path, while keys on the other primaries are read from
 * Redis as before.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connectCluster, keySlot } from "../../resp/cluster/client.ts";
import type { Arg, SendOptions } from "../../resp/types.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { startCluster } from "../support/redis_cluster.ts";
import { events, origin, spread } from "../support/strategies.ts";

const Down = suite("onRedisDown on a cluster");

Down("a silent primary sends only its slots' keys to this process; the others read Redis", async () => {
  // No replicas: nothing fails the silent primary over while the test runs.
  const cluster = await startCluster({ replicas: 0, nodeTimeoutMs: 60_000 });
  const redis = await connectCluster({ seeds: cluster.seeds, resp: 3, commandTimeoutMs: 150 });
  // The real cluster client, counting what is sent through it; its key-to-node map is what keeps the outage per node.
  const wire = {
    sent: 0,
    send(args: readonly Arg[], options?: SendOptions) {
      wire.sent++;
      return redis.send(args, options);
    },
    nodeFor: (key: Arg) => redis.nodeFor(key),
  };
  const ev = events();
  const cache = pipeline<string>(
    { redis: wire, ttlMs: 60_000, namespace: "cd", onRedisDown: "local", probeMs: 60_000, onEvent: ev.onEvent },
    coalesce(),
    lease(),
  );
  let stopped: { signal(s: NodeJS.Signals): void } | undefined;
  try {
    const ids = spread(cluster, cache, 2);
    for (const id of ids) assert.is(await cache.get(id, () => `stored ${id}`), `stored ${id}`);
    const silent = cluster.ownerOf(keySlot(cache.keys(ids[0]!).data));
    stopped = cluster.nodes.find((n) => n.port === silent)!;
    stopped.signal("SIGSTOP");
    const onSilent = ids.filter((id) => cluster.ownerOf(keySlot(cache.keys(id).data)) === silent);
    const elsewhere = ids.filter((id) => !onSilent.includes(id));
    assert.is(onSilent.length, 2);
    // A key of the silent node: the first get finds it silent and is served locally.
    const o = origin(() => "local");
    assert.is(await cache.get(onSilent[0]!, o.load), "local");
    await ev.reach("redis-down", 1);
    // Keys of the other nodes are still read from Redis: hits, no origin call, nothing degraded.
    const before = cache.stats();
    for (const id of elsewhere) assert.is(await cache.get(id, o.load), `stored ${id}`);
    const after = cache.stats();
    assert.is(after.hits - before.hits, elsewhere.length);
    assert.is(after.degraded, before.degraded);
    // The other key of the silent node goes straight to this process: nothing is sent to wait on.
    const sent = wire.sent;
    assert.is(await cache.get(onSilent[1]!, o.load), "local");
    assert.is(wire.sent, sent, "a get of the silent node's slots sent a command");
    assert.is(o.calls, 2);
    assert.equal(ev.seen.filter((e) => e.type === "redis-down").length, 1);
  } finally {
    stopped?.signal("SIGCONT");
    await cache.close({ timeoutMs: 1000 });
    redis.destroy();
    await cluster.stop();
  }
});

Down.run();
