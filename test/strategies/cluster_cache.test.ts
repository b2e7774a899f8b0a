/**
 * The near cache and the rest of the cache API (set, peek, getMany,
 * invalidateTags, clear) on a Redis Cluster of 3 primaries and 3 replicas,
 * through two cluster clients standing for two processes. A cluster of its
 * own: one test here moves a slot.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, type RedisClient } from "../../resp/client.ts";
import { type ClusterClient, connectCluster, keySlot } from "../../resp/cluster.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { near } from "../../strategies/near.ts";
import { type Cache, pipeline } from "../../strategies/pipeline/pipeline.ts";
import { type RedisCluster, startCluster } from "../support/redis-cluster.ts";
import { origin, until } from "./_helpers.ts";

interface Ctx {
  cluster: RedisCluster;
  /** RESP3, so near() can track its reads. */
  a: ClusterClient;
  b: ClusterClient;
  admins: Map<number, RedisClient>;
}

let n = 0;
const ns = () => `cq${++n}`;

async function admin(ctx: Ctx, port: number): Promise<RedisClient> {
  // Never fall back to connect()'s default port: that is someone else's server.
  if (!Number.isInteger(port) || port <= 0) throw new Error(`admin(): no such port ${port}`);
  let c = ctx.admins.get(port);
  if (c === undefined) {
    c = await connect({ port });
    ctx.admins.set(port, c);
  }
  return c;
}

/** `perPrimary` identities whose data keys land on each primary. */
function spread(cluster: RedisCluster, cache: Cache<unknown>, perPrimary: number): string[] {
  const primaries = cluster.primaries();
  const count = new Map<number, number>();
  const out: string[] = [];
  for (let i = 0; out.length < perPrimary * primaries.length; i++) {
    const id = `item-${i}`;
    const port = cluster.ownerOf(keySlot(cache.keys(id).data));
    if ((count.get(port) ?? 0) >= perPrimary) continue;
    count.set(port, (count.get(port) ?? 0) + 1);
    out.push(id);
  }
  return out;
}

const api = suite<Ctx>("the cache API on a cluster");
api.before(async (ctx) => {
  ctx.cluster = await startCluster();
  ctx.a = await connectCluster({ seeds: ctx.cluster.seeds, resp: 3 });
  ctx.b = await connectCluster({ seeds: ctx.cluster.seeds.slice(3), resp: 2 });
  ctx.admins = new Map();
});
api.after(async (ctx) => {
  ctx.a?.destroy();
  ctx.b?.destroy();
  for (const c of ctx.admins?.values() ?? []) c.destroy();
  await ctx.cluster?.stop();
});

api(
  "near() on a cluster: hits from memory, and an entry leaves when another client writes its key on any primary",
  async (
    ctx,
  ) => {
    const namespace = ns();
    const cache = pipeline<string>({ redis: ctx.a, ttlMs: 60_000, namespace }, near(), coalesce(), lease());
    const writer = pipeline<string>({ redis: ctx.b, ttlMs: 60_000, namespace });
    const ids = spread(ctx.cluster, cache as Cache<unknown>, 3);
    const o = origin(() => "v1");
    for (const id of ids) {
      assert.is(await cache.get(id, o.load), "v1");
      assert.is(await cache.get(id, o.load), "v1"); // a remote hit, kept near
    }
    assert.is(cache.stats().nearEntries, ids.length, "an entry from every primary");
    const nearHits = cache.stats().nearHits;
    for (const id of ids) for (let i = 0; i < 10; i++) assert.is(await cache.get(id, o.load), "v1");
    assert.is(cache.stats().nearHits - nearHits, ids.length * 10);
    assert.is(o.calls, ids.length);
    // Another process publishes on every primary: each node invalidates its own keys.
    for (const id of ids) await writer.set(id, `new ${id}`);
    await until(() => cache.stats().nearEntries === 0);
    for (const id of ids) assert.is(await cache.get(id, o.load), `new ${id}`);
    // A raw write on the node itself, behind every client's back.
    await cache.get(ids[0]!, o.load);
    assert.is(cache.stats().nearEntries, ids.length);
    const owner = ctx.cluster.ownerOf(keySlot(cache.keys(ids[0]!).data));
    await (await admin(ctx, owner)).send(["DEL", cache.keys(ids[0]!).data]);
    await until(() => cache.stats().nearEntries === ids.length - 1);
    assert.is(await cache.get(ids[0]!, () => "reloaded"), "reloaded");
    await Promise.all([cache.close(), writer.close()]);
  },
);

api(
  "near() on a cluster: a slot that moves leaves the tier, and the new owner's writes invalidate what it serves",
  async (ctx) => {
    const { cluster } = ctx;
    const namespace = ns();
    const cache = pipeline<string>({ redis: ctx.a, ttlMs: 60_000, namespace }, near(), lease());
    const writer = pipeline<string>({ redis: ctx.b, ttlMs: 60_000, namespace });
    const [from, to] = cluster.primaries();
    const id = spread(cluster, cache as Cache<unknown>, 1).find((i) =>
      cluster.ownerOf(keySlot(cache.keys(i).data)) === from!.port
    )!;
    const slot = keySlot(cache.keys(id).data);
    await cache.get(id, () => "before");
    assert.is(await cache.get(id, () => "unused"), "before");
    assert.is(cache.stats().nearEntries, 1);
    // Move the slot with its keys (IMPORTING, MIGRATING, MIGRATE, SETSLOT NODE on every primary).
    const source = await admin(ctx, from!.port);
    await (await admin(ctx, to!.port)).send(["CLUSTER", "SETSLOT", slot, "IMPORTING", from!.id]);
    await source.send(["CLUSTER", "SETSLOT", slot, "MIGRATING", to!.id]);
    const keys = (await source.send(["CLUSTER", "GETKEYSINSLOT", slot, 100])) as string[];
    await source.send(["MIGRATE", "127.0.0.1", to!.port, "", 0, 5000, "KEYS", ...keys]);
    for (const p of [to!, from!, ...cluster.primaries().slice(2)]) {
      await (await admin(ctx, p.port)).send(["CLUSTER", "SETSLOT", slot, "NODE", to!.id]);
    }
    // MIGRATE deleted the keys on the old owner, which tells the connection tracking them.
    await until(() => cache.stats().nearEntries === 0);
    // The next read meets MOVED (the client's map still names the old owner) and is served by the new one.
    await writer.set(id, "written on the new owner");
    assert.is(await cache.get(id, () => "unused"), "written on the new owner");
    assert.ok(ctx.a.stats().moved > 0, "the cache's client followed MOVED");
    assert.is(ctx.a.nodeFor(cache.keys(id).data), `127.0.0.1:${to!.port}`);
    // Kept near again, now tracked by the new owner: its writes invalidate.
    assert.is(await cache.get(id, () => "unused"), "written on the new owner");
    await writer.set(id, "again");
    await until(() => cache.stats().nearEntries === 0);
    assert.is(await cache.get(id, () => "unused"), "again");
    await Promise.all([cache.close(), writer.close()]);
  },
);

api("set, peek and getMany across every primary, through two clients", async (ctx) => {
  const namespace = ns();
  const one = pipeline<string>({ redis: ctx.a, ttlMs: 60_000, namespace }, lease());
  const two = pipeline<string>({ redis: ctx.b, ttlMs: 60_000, namespace }, lease());
  const ids = spread(ctx.cluster, one as Cache<unknown>, 4);
  const stored = ids.filter((_, i) => i % 2 === 0);
  for (const id of stored) await one.set(id, `set ${id}`);
  assert.equal(await Promise.all(ids.map((id) => two.peek(id))), ids.map((id, i) => i % 2 ? undefined : `set ${id}`));
  const calls: (readonly unknown[])[] = [];
  const values = await two.getMany(ids, (missing) => {
    calls.push(missing);
    return Promise.resolve(missing.map((m) => `loaded ${String(m)}`));
  });
  assert.equal(values, ids.map((id, i) => i % 2 ? `loaded ${id}` : `set ${id}`));
  assert.equal(calls, [ids.filter((_, i) => i % 2 === 1)], "one loadMany call with every miss, on any node");
  assert.equal(
    await Promise.all(ids.map((id) => one.peek(id))),
    values,
    "the loads were published for the other client",
  );
  await Promise.all([one.close(), two.close()]);
});

api("invalidateTags and clear reach entries on every primary", async (ctx) => {
  const namespace = ns();
  const one = pipeline<string>({ redis: ctx.a, ttlMs: 60_000, namespace });
  const two = pipeline<string>({ redis: ctx.b, ttlMs: 60_000, namespace });
  const ids = spread(ctx.cluster, one as Cache<unknown>, 3);
  for (const [i, id] of ids.entries()) await one.set(id, id, { tags: i % 3 === 0 ? ["red"] : ["blue"] });
  await two.invalidateTags(["red"]);
  assert.equal(
    await Promise.all(ids.map((id) => one.peek(id))),
    ids.map((id, i) => i % 3 === 0 ? undefined : id),
    "only the red entries are gone, whichever node holds them",
  );
  await one.clear();
  assert.equal(await Promise.all(ids.map((id) => two.peek(id))), ids.map(() => undefined));
  assert.is(await two.get(ids[1]!, () => "after clear"), "after clear");
  await Promise.all([one.close(), two.close()]);
});

api.run();
