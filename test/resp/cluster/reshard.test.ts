/**
 * The cluster client while slots change owner: a node with an older view
 * must not undo what MOVED taught, and a live
 * `redis-cli --cluster reshard` under load reaches no caller. A cluster of
 * its own (3 primaries, 3 replicas): these tests leave slots moved.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ClusterClient, connectCluster, keySlot } from "../../../resp/cluster/client.ts";
import { resolveClusterOptions } from "../../../resp/cluster/options.ts";
import { connect, type RedisClient } from "../../../resp/client.ts";
import { until } from "../../support/wait.ts";
import { load, summary } from "../../support/load.ts";
import { startProxy } from "../../support/proxy.ts";
import { sharedCluster } from "../../support/fixture.ts";
import type { RedisCluster } from "../../support/redis_cluster.ts";

interface Ctx {
  cluster: RedisCluster;
  admins: Map<number, RedisClient>;
}

/** A direct connection to one node, behind the cluster client's back. */
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

/** `count` hash tags in distinct empty slots owned by the primary on `port`. */
async function emptySlotTags(ctx: Ctx, port: number, prefix: string, count: number): Promise<string[]> {
  const ranges = ctx.cluster.primaries().find((p) => p.port === port)!.slots;
  const owner = await admin(ctx, port);
  const tags: string[] = [];
  const slots = new Set<number>();
  for (let i = 0; tags.length < count; i++) {
    const tag = `${prefix}${i}`;
    const s = keySlot(tag);
    if (slots.has(s) || !ranges.some(([a, b]) => s >= a && s <= b)) continue;
    if ((await owner.send(["CLUSTER", "COUNTKEYSINSLOT", s])) !== 0) continue;
    slots.add(s);
    tags.push(tag);
  }
  return tags;
}

const reshard = suite<Ctx>("ClusterClient: resharding");
sharedCluster({
  open: () => Promise.resolve({ admins: new Map<number, RedisClient>() }),
  close({ admins }) {
    for (const a of admins.values()) a.destroy();
  },
}).use(reshard, { last: true });

reshard(
  "a slot map read from a node with an older view never undoes what MOVED taught",
  async (ctx) => {
    const { cluster } = ctx;
    const [from, to, third] = cluster.primaries();
    const stale = await cluster.replicaOf(from!.port);
    // Every map read goes first through a proxy in front of a replica of the
    // old owner. Holding the proxy's replies freezes a read answered before
    // the slot moved (replicas learn of a SETSLOT only by gossip) and lands
    // it after the MOVED replies: the race between gossip and MOVED, forced.
    const proxy = await startProxy(stale);
    const client = new ClusterClient({
      ...resolveClusterOptions({ seeds: [...cluster.seeds, proxy.url], retryDelayMs: 5 }),
      mapSourceFirst: `127.0.0.1:${proxy.port}`,
    });
    const tags = await emptySlotTags(ctx, from!.port, "stale", 5);
    const moved: number[] = [];
    try {
      await client.ready;
      for (const tag of tags) {
        const key = `{${tag}}:k`;
        const slot = keySlot(key);
        assert.is(client.nodeFor(key), `127.0.0.1:${from!.port}`);
        const before = client.stats();
        proxy.holdReplies();
        const read = client.refresh();
        await until(() => proxy.heldText().length > 0, 5000, 1);
        assert.is(cluster.ownerOf(slot, stale), from!.port, "the held read was answered before the move");
        // An empty slot reassigned on the primaries only, old owner first
        // (it stops claiming the slot before anyone else takes it).
        moved.push(slot);
        for (const p of [from!, to!, third!]) {
          await (await admin(ctx, p.port)).send(["CLUSTER", "SETSLOT", slot, "NODE", to!.id]);
        }
        const gets = await Promise.allSettled(Array.from({ length: 100 }, () => client.send(["GET", key])));
        assert.equal(gets.filter((g) => g.status === "rejected"), [], "no get failed");
        const during = client.stats();
        assert.is(during.redirections - before.redirections, 100, "one MOVED a get");
        assert.is(during.refreshes, before.refreshes, "the held read has not landed yet");
        proxy.releaseReplies();
        await read;
        assert.ok(client.stats().refreshes > before.refreshes, "the old view was read");
        assert.is(client.nodeFor(key), `127.0.0.1:${to!.port}`, "a read older than the MOVED did not undo it");
        // 100 more gets, one at a time, the map re-read (through the same
        // replica) every 10: none is redirected again.
        for (let i = 0; i < 100; i++) {
          if (i % 10 === 0) await client.refresh();
          const was = client.stats().redirections;
          assert.is(await client.send(["GET", key]), null);
          const took = client.stats().redirections - was;
          assert.is(took, 0, `get ${i} after the old view landed took ${took} redirections`);
        }
      }
    } finally {
      proxy.releaseReplies();
      client.destroy();
      await proxy.close();
      // Give the slots back, so every node agrees again for the next test.
      for (const slot of moved) {
        for (const p of [to!, from!, third!]) {
          await (await admin(ctx, p.port)).send(["CLUSTER", "SETSLOT", slot, "NODE", from!.id]);
        }
      }
      await cluster.waitHealthy();
    }
  },
);

reshard(
  "a live redis-cli --cluster reshard of 100 slots while 4 clients read and write: no caller error, redirections counted",
  async (ctx) => {
    const { cluster } = ctx;
    const [from, to] = cluster.primaries();
    // redis-cli takes a source's lowest slots first: keys there move, the others stay.
    const first = from!.slots[0]![0];
    const keys: string[] = [];
    for (let i = 0, inside = 0, outside = 0; inside < 48 || outside < 16; i++) {
      const key = `{live${i}}:v`;
      const s = keySlot(key);
      const moves = s >= first && s < first + 100;
      if (moves ? inside++ < 48 : outside++ < 16) keys.push(key);
    }
    const clients = await Promise.all([0, 1, 2, 3].map(() => connectCluster({ seeds: cluster.seeds })));
    // Each key has one writer (worker w owns the keys k with k % 8 === w), so
    // every read must return that writer's last acknowledged value.
    const last = new Map<string, string>();
    await Promise.all(keys.map((k) => clients[0]!.send(["SET", k, "0"]).then(() => last.set(k, "0"))));
    const wrong: string[] = [];
    let ops = 0;
    let done = false;
    const loaded = load(8, async (w, i) => {
      const client = clients[w % 4]!;
      const mine = keys.filter((_, k) => k % 8 === w);
      const key = mine[i % mine.length]!;
      if (i % 2 === 0) {
        const value = `${w}:${i}`;
        await client.send(["SET", key, value]);
        last.set(key, value);
      } else {
        const got = await client.send(["GET", key]);
        if (got !== last.get(key)) wrong.push(`${key}: read ${String(got)}, last written ${last.get(key)}`);
      }
      ops++;
    }, () => done);
    let moved = false;
    try {
      await until(() => ops > 100, 10_000, 5);
      const out = await cluster.cliAsync(
        from!.port,
        "--cluster",
        "reshard",
        `127.0.0.1:${from!.port}`,
        "--cluster-from",
        from!.id,
        "--cluster-to",
        to!.id,
        "--cluster-slots",
        "100",
        "--cluster-yes",
      );
      moved = true;
      assert.ok(out.includes(`Moving slot ${first + 99} from`), "redis-cli moved the 100 slots");
      // Every worker goes round its keys again on the new owners.
      const after = ops;
      await until(() => ops > after + 400, 10_000, 5);
    } finally {
      done = true;
    }
    const { ok, errors } = await loaded;
    const stats = clients.map((c) => c.stats());
    for (const c of clients) c.destroy();
    assert.ok(moved);
    assert.equal(errors, [], `no caller saw an error (${summary(errors)})`);
    assert.equal(wrong, [], "every read returned the key's last acknowledged write");
    assert.ok(ok > 500, `the load ran (${ok} calls)`);
    for (let i = first; i < first + 100; i++) assert.is(cluster.ownerOf(i), to!.port, `slot ${i} moved`);
    for (const s of stats) assert.is(s.redirections, s.moved + s.asked, "redirections = moved + asked");
    assert.ok(stats.every((s) => s.moved > 0), `every client followed MOVED (${stats.map((s) => s.moved)})`);
    const check = await connectCluster({ seeds: cluster.seeds });
    try {
      for (const k of keys) assert.is(await check.send(["GET", k]), last.get(k), `${k} kept its last write`);
    } finally {
      check.destroy();
    }
  },
);

reshard.run();
