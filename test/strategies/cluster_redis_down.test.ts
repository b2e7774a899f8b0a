/**
 * `onRedisDown: "local"` on a Redis Cluster through herdless' ClusterClient:
 * the outage is kept per node, so a silent primary sends only the keys of its
 * slots to the local path, while keys on the other primaries are read from
 * Redis as before; a silent epoch's node, which every untracked read needs,
 * sends every get to the local path until a probe finds it back.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connectCluster, keySlot } from "../../resp/cluster/client.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { type RedisCluster, startCluster } from "../support/redis_cluster.ts";
import { counting, events, origin, spread } from "../support/strategies.ts";

const Down = suite<{ cluster: RedisCluster }>("onRedisDown on a cluster");

// No replicas: nothing fails a silent primary over while a test runs.
Down.before(async (ctx) => {
  ctx.cluster = await startCluster({ replicas: 0, nodeTimeoutMs: 60_000 });
});
Down.after(async (ctx) => {
  await ctx.cluster?.stop();
});

// The real cluster client, counting the reads sent through it; its key-to-node map is what keeps the outage per node.
async function counted(cluster: RedisCluster) {
  const redis = await connectCluster({ seeds: cluster.seeds, resp: 3, commandTimeoutMs: 150 });
  return Object.assign(counting(redis), { destroy: () => redis.destroy() });
}

Down("a silent primary sends only its slots' keys to this process; the others read Redis", async ({ cluster }) => {
  const wire = await counted(cluster);
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
    // A primary that does not hold the epoch, which every read here needs (no near tier tracks it).
    const epochOwner = cluster.ownerOf(keySlot("cd:{}:epoch"));
    const silent = ids.map((id) => cluster.ownerOf(keySlot(cache.keys(id).data))).find((port) => port !== epochOwner)!;
    // Owners are asked before the stop: the harness asks a node, which may be the silent one.
    const onSilent = ids.filter((id) => cluster.ownerOf(keySlot(cache.keys(id).data)) === silent);
    const elsewhere = ids.filter((id) => !onSilent.includes(id));
    assert.is(onSilent.length, 2);
    stopped = cluster.nodes.find((n) => n.port === silent)!;
    stopped.signal("SIGSTOP");
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
    // The other key of the silent node goes straight to this process: nothing is read to wait on.
    const reads = wire.reads;
    assert.is(await cache.get(onSilent[1]!, o.load), "local");
    assert.is(wire.reads, reads, "a get of the silent node's slots read Redis");
    assert.is(o.calls, 2);
    assert.equal(ev.seen.filter((e) => e.type === "redis-down").length, 1);
  } finally {
    stopped?.signal("SIGCONT");
    await cache.close({ timeoutMs: 1000 });
    wire.destroy();
  }
});

Down(
  "the epoch's primary silent: every untracked get is served here, until a probe finds it back",
  async ({ cluster }) => {
    const wire = await counted(cluster);
    const ev = events();
    // A clock of our own moves the cache past probeMs without a sleep.
    let skew = 0;
    const now = () => performance.now() + skew;
    const cache = pipeline<string>(
      { redis: wire, ttlMs: 60_000, namespace: "ce", onRedisDown: "local", probeMs: 5_000, onEvent: ev.onEvent, now },
      coalesce(),
      lease(),
    );
    let stopped: { signal(s: NodeJS.Signals): void } | undefined;
    try {
      const ids = spread(cluster, cache, 2);
      for (const id of ids) assert.is(await cache.get(id, () => `stored ${id}`), `stored ${id}`);
      const epochOwner = cluster.ownerOf(keySlot("ce:{}:epoch"));
      const elsewhere = ids.filter((id) => cluster.ownerOf(keySlot(cache.keys(id).data)) !== epochOwner);
      assert.ok(elsewhere.length >= 3);
      stopped = cluster.nodes.find((n) => n.port === epochOwner)!;
      stopped.signal("SIGSTOP");
      // The data key's primary answers, the epoch's does not: its node is the one down, and this get is served here.
      const o = origin(() => "local");
      assert.is(await cache.get(elsewhere[0]!, o.load), "local");
      await ev.reach("redis-down", 1);
      // No entry can be checked against the epoch now: a key on a healthy primary goes to this process at once.
      const reads = wire.reads;
      const before = cache.stats();
      assert.is(await cache.get(elsewhere[1]!, o.load), "local");
      assert.is(wire.reads, reads, "a get read Redis while the epoch's primary was down");
      assert.is(cache.stats().degraded - before.degraded, 1);
      assert.is(o.calls, 2);
      // Back: after probeMs one get reads Redis (data and epoch), finds both, and its stored value is served.
      stopped.signal("SIGCONT");
      stopped = undefined;
      skew += 5_001;
      assert.is(await cache.get(elsewhere[2]!, o.load), `stored ${elsewhere[2]}`);
      await ev.reach("redis-up", 1);
      assert.is(o.calls, 2);
      // A key served a value loaded here meanwhile never goes back to the older stored one: a load decides.
      assert.is(await cache.get(elsewhere[1]!, o.load), "local");
      assert.is(o.calls, 3);
      assert.equal(ev.seen.filter((e) => e.type === "redis-down").length, 1);
    } finally {
      stopped?.signal("SIGCONT");
      await cache.close({ timeoutMs: 1000 });
      wire.destroy();
    }
  },
);

Down.run();
