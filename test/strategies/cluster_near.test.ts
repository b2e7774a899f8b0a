/**
 * near() on a Redis Cluster (3 primaries, 3 replicas): the near tier of one
 * cluster client stays coherent with writes made through another client, and
 * a slot that moves (a migration, a failover) takes its entries with it, so
 * no process keeps serving a value the slot's new owner has overwritten.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connectCluster, keySlot } from "../../resp/cluster/client.ts";
import { near } from "../../strategies/near.ts";
import type { Cache } from "../../strategies/cache.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import type { RedisCluster } from "../support/redis_cluster.ts";
import { type ClusterContext, twoProcessCluster, type TwoProcesses } from "../support/fixture.ts";
import { untilNearHit } from "../support/strategies.ts";
import { until } from "../support/wait.ts";

/** The shared cluster and two clients, as two processes would have (see {@linkcode TwoProcesses}). */
type Ctx = ClusterContext<TwoProcesses>;

const test = suite<Ctx>("near() on a cluster");
const shared = twoProcessCluster("cn");
shared.use(test, { last: true });

/** A reader with a near tier on `a` and a writer on `b`, in a fresh namespace. */
function caches(ctx: Ctx): { reader: Cache<string>; writer: Cache<string> } {
  const namespace = shared.ns();
  return {
    reader: pipeline<string>({ redis: ctx.a, ttlMs: 60_000, namespace }, near({ maxEntries: 100 })),
    writer: pipeline<string>({ redis: ctx.b, ttlMs: 60_000, namespace }),
  };
}

/** Load `id` through the reader and read it until the near tier serves it. */
async function held(reader: Cache<string>, id: string, value: string): Promise<void> {
  assert.is(await reader.get(id, () => value), value);
  await untilNearHit(reader, id, value);
}

/** Move `slot` to another primary the way a resharding tool does: IMPORTING, MIGRATING, MIGRATE, SETSLOT NODE. */
function migrate(cluster: RedisCluster, slot: number): number {
  const from = cluster.ownerOf(slot);
  const to = cluster.primaries().find((p) => p.port !== from)!.port;
  cluster.cli(to, "CLUSTER", "SETSLOT", String(slot), "IMPORTING", cluster.id(from));
  cluster.cli(from, "CLUSTER", "SETSLOT", String(slot), "MIGRATING", cluster.id(to));
  const keys = cluster.cli(from, "CLUSTER", "GETKEYSINSLOT", String(slot), "1000").split("\n").filter(Boolean);
  if (keys.length > 0) cluster.cli(from, "MIGRATE", "127.0.0.1", String(to), "", "0", "5000", "KEYS", ...keys);
  for (const primary of cluster.primaries()) {
    cluster.cli(primary.port, "CLUSTER", "SETSLOT", String(slot), "NODE", cluster.id(to));
  }
  return to;
}

test("a write through another cluster client invalidates the reader's near entry", async (ctx) => {
  const { reader, writer } = caches(ctx);
  await held(reader, "item", "v1");
  const invalidations = reader.stats().nearInvalidations;
  await writer.set("item", "v2");
  await until(() => reader.stats().nearInvalidations > invalidations);
  assert.is(await reader.get("item", () => "never"), "v2");
  await Promise.all([reader.close(), writer.close()]);
});

test("entries from every primary are served from memory, and a raw DEL on one node drops only its entry", async (ctx) => {
  const { reader, writer } = caches(ctx);
  // One identity whose data key lives on each primary.
  const ids: string[] = [];
  const owners = new Set<number>();
  for (let i = 0; ids.length < ctx.cluster.primaries().length; i++) {
    const owner = ctx.cluster.ownerOf(keySlot(reader.keys(`p${i}`).data));
    if (owners.has(owner)) continue;
    owners.add(owner);
    ids.push(`p${i}`);
  }
  for (const id of ids) await held(reader, id, id);
  assert.is(reader.stats().nearEntries, ids.length);
  const hits = reader.stats().nearHits;
  for (const id of ids) assert.is(await reader.get(id, () => "never"), id);
  assert.is(reader.stats().nearHits - hits, ids.length, "each from memory");
  // Behind every client's back, on the node itself.
  const key = reader.keys(ids[0]!).data;
  ctx.cluster.cli(ctx.cluster.ownerOf(keySlot(key)), "DEL", key);
  await until(() => reader.stats().nearEntries === ids.length - 1);
  assert.is(await reader.get(ids[0]!, () => "reloaded"), "reloaded");
  for (const id of ids.slice(1)) assert.is(await reader.get(id, () => "never"), id);
  await Promise.all([reader.close(), writer.close()]);
});

test("a migrated slot takes its near entries with it, and the next read is a hit on the new owner", async (ctx) => {
  const { reader, writer } = caches(ctx);
  await held(reader, "moving", "v1");
  const invalidations = reader.stats().nearInvalidations;
  const slot = keySlot(reader.keys("moving").data);
  const to = migrate(ctx.cluster, slot);
  await ctx.cluster.waitHealthy();
  // MIGRATE deletes the keys on the old owner, which tells the reader's
  // tracking connection there: the entry leaves the near tier.
  await until(() => reader.stats().nearInvalidations > invalidations);
  // The writer's client learns the new owner from MOVED; v2 lands there only,
  // where the reader never read, so only the dropped entry lets v2 through.
  await writer.set("moving", "v2");
  assert.is(ctx.b.nodeFor(reader.keys("moving").data), `127.0.0.1:${to}`);
  // The reader's GET goes to the old owner, is MOVED, and is answered by a
  // node whose clock this cache never measured: still a hit, never a load.
  const loads = reader.stats().loads;
  assert.is(await reader.get("moving", () => "never"), "v2");
  assert.is(reader.stats().loads, loads, "no origin call for a value Redis holds");
  assert.is(ctx.a.nodeFor(reader.keys("moving").data), `127.0.0.1:${to}`);
  assert.is(await reader.peek("moving"), "v2");
  await Promise.all([reader.close(), writer.close()]);
});

test("after a failover a write on the promoted replica still reaches the reader's near entry", async (ctx) => {
  const { reader, writer } = caches(ctx);
  await held(reader, "failing", "v1");
  const key = reader.keys("failing").data;
  const replica = await ctx.cluster.replicaOf(ctx.cluster.ownerOf(keySlot(key)));
  await ctx.cluster.failover(replica);
  await ctx.cluster.waitHealthy();
  const invalidations = reader.stats().nearInvalidations;
  await writer.set("failing", "v2");
  assert.is(ctx.b.nodeFor(key), `127.0.0.1:${replica}`, "the writer wrote on the promoted replica");
  // The reader read the key on the old primary, now a replica of the new
  // one: either the replicated write invalidates it there, or the reader's
  // connection was reset by the role change. Both drop the entry.
  await until(() => reader.stats().nearInvalidations > invalidations || reader.stats().nearEntries === 0);
  const loads = reader.stats().loads;
  assert.is(await reader.get("failing", () => "never"), "v2");
  assert.is(reader.stats().loads, loads, "no origin call for a value Redis holds");
  await Promise.all([reader.close(), writer.close()]);
});

test("over RESP2 the near tier runs on invalidation messages; losing their connection drops its entries", async (ctx) => {
  const resp2 = await connectCluster({ seeds: ctx.cluster.seeds, resp: 2 });
  const namespace = shared.ns();
  const reader = pipeline<string>({ redis: resp2, ttlMs: 60_000, namespace }, near({ maxEntries: 100 }));
  const writer = pipeline<string>({ redis: ctx.b, ttlMs: 60_000, namespace });
  try {
    assert.is(reader.invalidationMode(), "messages");
    await held(reader, "item", "v1");
    await writer.set("item", "v2");
    await until(async () => (await reader.get("item", () => "never")) === "v2");
    await held(reader, "item", "v2");
    // The pub/sub connection lives on one node: kill it wherever it is.
    for (const url of ctx.cluster.seeds) ctx.cluster.cli(Number(new URL(url).port), "CLIENT", "KILL", "TYPE", "pubsub");
    await until(() => reader.stats().nearEntries === 0);
    // Back once it is subscribed again: a later write still reaches the tier.
    await held(reader, "item", "v2");
    await writer.set("item", "v3");
    await until(async () => (await reader.get("item", () => "never")) === "v3");
  } finally {
    await Promise.all([reader.close(), writer.close()]);
    await resp2.close();
  }
});

test("where the nodes refuse CLIENT TRACKING (an ACL), the near tier moves to messages and stays coherent", async (ctx) => {
  for (const url of ctx.cluster.seeds) {
    const port = Number(new URL(url).port);
    ctx.cluster.cli(port, "ACL", "SETUSER", "nt", "on", ">pw", "~*", "&*", "+@all", "-client|tracking");
  }
  const refused = await connectCluster({ seeds: ctx.cluster.seeds, resp: 3, username: "nt", password: "pw" });
  const namespace = shared.ns();
  const modes: string[] = [];
  const reader = pipeline<string>(
    { redis: refused, ttlMs: 60_000, namespace, onEvent: (e) => e.type === "invalidation-mode" && modes.push(e.mode) },
    near({ maxEntries: 100 }),
  );
  const writer = pipeline<string>({ redis: ctx.b, ttlMs: 60_000, namespace });
  try {
    await held(reader, "item", "v1");
    assert.equal([reader.invalidationMode(), modes], ["messages", ["messages"]]);
    await writer.set("item", "v2");
    await until(async () => (await reader.get("item", () => "never")) === "v2");
  } finally {
    await Promise.all([reader.close(), writer.close()]);
    await refused.close();
  }
});

/** GET calls every primary counted so far (`INFO commandstats`). */
function getCalls(cluster: RedisCluster): number {
  let calls = 0;
  for (const primary of cluster.primaries()) {
    calls += Number(/cmdstat_get:calls=(\d+)/.exec(cluster.cli(primary.port, "INFO", "commandstats"))?.[1] ?? 0);
  }
  return calls;
}

test("100 concurrent gets of one identity in one process send one GET to the cluster (RESP3 near, RESP2 with the epoch)", async (ctx) => {
  const namespace = shared.ns();
  const writer = pipeline<string>({ redis: ctx.b, ttlMs: 60_000, namespace });
  const reader3 = pipeline<string>({ redis: ctx.a, ttlMs: 60_000, namespace }, near({ maxEntries: 100 }));
  const reader2 = pipeline<string>({ redis: ctx.b, ttlMs: 60_000, namespace });
  for (const id of ["warm", "hot3", "hot2"]) await writer.set(id, "stored");
  // Tracking on, clocks measured, the epoch known: then only the burst's reads remain.
  await reader3.get("warm", () => "loaded");
  await reader2.get("warm", () => "loaded");
  for (const [reader, id, want] of [[reader3, "hot3", 1], [reader2, "hot2", 2]] as const) {
    const before = getCalls(ctx.cluster);
    const values = await Promise.all(Array.from({ length: 100 }, () => reader.get(id, () => "loaded")));
    assert.ok(values.every((v) => v === "stored"));
    assert.is(getCalls(ctx.cluster) - before, want, `${id}: GETs sent`);
  }
  await Promise.all([reader3.close(), reader2.close(), writer.close()]);
});

test.run();
