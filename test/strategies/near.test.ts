import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect } from "../../resp/client.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { near, SieveTier } from "../../strategies/near.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { swr } from "../../strategies/swr.ts";
import { xfetch } from "../../strategies/xfetch.ts";
import type { CacheContext, StoredEntry } from "../../strategies/contract.ts";
import { type Proxy, startProxy } from "../support/proxy.ts";
import { rejects } from "../support/assert.ts";
import { client, useRedis } from "../support/fixture.ts";
import { events, origin, plant } from "../support/strategies.ts";
import { deferred, until } from "../support/wait.ts";

const Near = suite("near()");
const db = useRedis(Near, { prefix: "near", clients: 2 });

/** A cache with a near tier on its own RESP3 connection, and a writer cache on another. */
async function pair(namespace = db.ns(), options: Parameters<typeof near>[0] = {}) {
  const own = await client(db.server.url);
  const ev = events();
  const cache = pipeline(
    { redis: own, ttlMs: 60_000, namespace, onEvent: ev.onEvent },
    near(options),
    coalesce(),
    lease(),
  );
  const writer = pipeline({ redis: db.other, ttlMs: 60_000, namespace });
  const close = async () => {
    await Promise.all([cache.close(), writer.close()]);
    own.destroy();
  };
  return { own, cache, writer, ev, close };
}

Near("near() rejects bad options, and a pipeline on an adapter (no invalidations), naming the fix", async () => {
  await rejects(
    () => near({ maxEntries: 0 }),
    RangeError,
    "Cannot create near: 'maxEntries' must be a positive integer, got 0",
  );
  await rejects(
    () => near({ maxBytes: 1.5 }),
    RangeError,
    "Cannot create near: 'maxBytes' must be a positive integer, got 1.5",
  );
  await rejects(
    () => near({ ttlMs: -1 }),
    RangeError,
    "Cannot create near: 'ttlMs' must be a positive integer, got -1",
  );
  const s = near();
  assert.equal([s.maxEntries, s.maxBytes, s.ttlMs], [10_000, undefined, undefined]);
  const fix = "Cannot create pipeline: near() needs invalidations, which only a herdless client " +
    "(connect() or connectCluster()) receives: an adapter cannot";
  const adapter = { send: (args: never) => db.redis.send(args) };
  await rejects(() => pipeline({ redis: adapter, ttlMs: 1000 }, near()), TypeError, fix);
  await rejects(
    () => pipeline({ redis: db.redis, ttlMs: 1000 }, near(), near()),
    TypeError,
    "Cannot create pipeline: near() is given twice (strategies 1 and 2); give each strategy once",
  );
  // A strategy of another name declaring a second local tier.
  const other = near();
  const second = { name: "second", attach: (c: CacheContext) => c.addLocalTier(other.local) };
  await rejects(
    () => pipeline({ redis: db.redis, ttlMs: 1000 }, near(), second),
    TypeError,
    "Cannot create pipeline: at most one near() tier per pipeline",
  );
});

Near(
  "near() says its invalidation mode once it is on, not only on a change: tracking on RESP3, messages on RESP2",
  async () => {
    for (
      const [resp, mode, gauge, reason] of [[3, "tracking", 1, "client tracking on"], [
        2,
        "messages",
        2,
        "invalidation messages on",
      ]] as const
    ) {
      const redis = await db.client({ resp });
      const ev = events();
      const cache = pipeline({ redis, ttlMs: 60_000, namespace: db.ns(), onEvent: ev.onEvent }, near());
      assert.is(cache.stats().invalidationMode, gauge, "the gauge says it from the start");
      await cache.get("k", () => "v");
      await cache.get("k", () => "v");
      const said = ev.seen.filter((e) => e.type === "invalidation-mode");
      assert.equal(said, [{ type: "invalidation-mode", mode, reason }], `RESP${resp}`);
      await cache.close();
      await redis.close();
    }
  },
);

Near("a near hit sends nothing to Redis", async () => {
  const { own, cache, close } = await pair();
  const o = origin(() => ({ theme: "dark" }));
  assert.equal(await cache.get("config", o.load), { theme: "dark" });
  assert.equal(await cache.get("config", o.load), { theme: "dark" }); // remote hit, kept near
  const writes = own.writes;
  for (let i = 0; i < 100; i++) assert.equal(await cache.get("config", o.load), { theme: "dark" });
  assert.is(own.writes, writes, "a near hit wrote to the socket");
  const stats = cache.stats();
  assert.equal([o.calls, stats.nearHits, stats.hits, stats.nearEntries], [1, 100, 101, 1]);
  await close();
});

Near("an entry leaves when anyone writes its key: this cache, another process, redis-cli SET and DEL", async () => {
  const { cache, writer, ev, close } = await pair();
  const o = origin((call) => `v${call}`);
  const warm = async () => {
    await cache.get("k", o.load);
    await cache.get("k", o.load);
    assert.is(cache.stats().nearEntries, 1);
  };
  // A publication by another process.
  await warm();
  await writer.set("k", "from another process");
  await until(() => cache.stats().nearEntries === 0);
  assert.is(await cache.get("k", o.load), "from another process");
  // This cache's own set().
  await warm();
  await cache.set("k", "from this cache");
  await until(() => cache.stats().nearEntries === 0);
  assert.is(await cache.get("k", o.load), "from this cache");
  // Raw writes from redis-cli.
  await warm();
  db.server.cli("SET", cache.keys("k").data, "not an envelope");
  await until(() => cache.stats().nearEntries === 0);
  await warm();
  db.server.cli("DEL", cache.keys("k").data);
  await until(() => cache.stats().nearEntries === 0);
  assert.ok(cache.stats().nearInvalidations >= 4);
  assert.ok(ev.count("near-invalidation") >= 4);
  await close();
});

Near("an entry leaves when its key expires in Redis", async () => {
  const { cache, close } = await pair();
  await plant(db.redis, cache, "k", { payload: '"short"', freshMs: 300 });
  assert.is(await cache.get("k", () => "loaded"), "short");
  assert.is(cache.stats().nearEntries, 1);
  // Redis expires the key (lazily on access, or its active cycle) and invalidates it.
  await until(async () =>
    (await db.other.send(["EXISTS", cache.keys("k").data])) === 0 && cache.stats().nearEntries === 0
  );
  await close();
});

Near("every entry leaves on FLUSHALL (the null invalidation) and on FLUSHDB", async () => {
  const { cache, close } = await pair();
  for (const id of ["a", "b", "c"]) {
    await cache.get(id, () => id);
    await cache.get(id, () => id);
  }
  assert.is(cache.stats().nearEntries, 3);
  await db.other.send(["FLUSHALL"]);
  await until(() => cache.stats().nearEntries === 0);
  await cache.get("a", () => "after flush");
  await cache.get("a", () => "unused");
  assert.is(cache.stats().nearEntries, 1);
  await db.other.send(["FLUSHDB"]);
  await until(() => cache.stats().nearEntries === 0);
  await close();
});

Near("every entry leaves when the connection is lost, and no old value is served after the reconnect", async () => {
  const { own, cache, writer, close } = await pair();
  await cache.get("k", () => "before");
  await cache.get("k", () => "unused");
  assert.is(cache.stats().nearEntries, 1);
  const generation = own.generation;
  await db.other.send(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
  await until(() => cache.stats().nearEntries === 0);
  // Written while the cache was disconnected: its invalidation went nowhere.
  await writer.set("k", "while disconnected");
  await until(() => own.generation > generation && own.connected);
  assert.is(await cache.get("k", () => "unused"), "while disconnected");
  await close();
});

Near("an invalidation that arrives with the reply of a read in flight never leaves the old value near", async () => {
  const proxy: Proxy = await startProxy(db.server.port);
  const own = await connect({ url: proxy.url, resp: 3 });
  const namespace = db.ns();
  const cache = pipeline({ redis: own, ttlMs: 60_000, namespace }, near());
  const writer = pipeline({ redis: db.other, ttlMs: 60_000, namespace });
  try {
    await writer.set("k", "old");
    // Warm the clock and the versions, so the next get is one GET.
    await cache.peek("warm-up");
    proxy.holdReplies();
    const reading = cache.get("k", () => "unused");
    await until(() => proxy.heldText().includes("old"));
    // The write lands after the GET ran: its invalidation follows the reply on the same connection.
    await writer.set("k", "new");
    await until(() => proxy.heldText().includes("invalidate"));
    // Both frames reach the client in one read: the reply's continuation runs after the push.
    proxy.releaseRepliesTogether();
    assert.is(await reading, "old", "the read returns what it read");
    assert.is(cache.stats().nearEntries, 0, "the overtaken read was not kept");
    assert.is(await cache.get("k", () => "unused"), "new");
  } finally {
    await Promise.all([cache.close(), writer.close()]);
    own.destroy();
    await proxy.close();
  }
});

Near("a near entry keeps its windows: swr serves it stale with one background refresh", async () => {
  const own = await client(db.server.url);
  const namespace = db.ns();
  const ev = events();
  const stale = pipeline(
    { redis: own, ttlMs: 60_000, namespace, onEvent: ev.onEvent },
    near(),
    swr({ staleMs: 60_000 }),
    lease(),
  );
  await plant(db.redis, stale, "k", { payload: '"old"', freshMs: 1_000, staleMs: 60_000, ageMs: 2_000 });
  const hold = deferred();
  const o = origin(() => "refreshed");
  o.hold = hold.promise;
  assert.is(await stale.get("k", o.load), "old");
  assert.is(await stale.get("k", o.load), "old");
  assert.is(stale.stats().nearHits, 1, "the stale entry was served from memory");
  await o.called();
  hold.resolve();
  await stale.close();
  assert.equal([o.calls, stale.stats().stale], [1, 2]);
  own.destroy();
});

Near("a near entry keeps xfetch's early refresh", async () => {
  const own = await client(db.server.url);
  const cache = pipeline(
    { redis: own, ttlMs: 60_000, namespace: db.ns(), random: () => 0.99 },
    near(),
    xfetch(),
    lease(),
  );
  await plant(db.redis, cache, "k", { payload: '"current"', freshMs: 60_000, loadMs: 50_000 });
  const o = origin(() => "early");
  assert.is(await cache.get("k", o.load), "current");
  await cache.close();
  assert.equal([o.calls, cache.stats().earlyRefreshes], [1, 1]);
  own.destroy();
});

Near("an entry leaves when its own ttlMs passes, and the tier stays within maxEntries", async () => {
  let now = 0;
  const own = await client(db.server.url);
  const cache = pipeline(
    { redis: own, ttlMs: 60_000, namespace: db.ns(), now: () => now },
    near({ maxEntries: 3, ttlMs: 100 }),
  );
  for (const id of ["a", "b", "c", "d", "e"]) {
    await cache.get(id, () => id);
    await cache.get(id, () => id);
    assert.ok(cache.stats().nearEntries <= 3);
  }
  const hits = cache.stats().nearHits;
  await cache.get("e", () => "e");
  assert.is(cache.stats().nearHits, hits + 1);
  now += 101;
  await cache.get("e", () => "e");
  assert.is(cache.stats().nearHits, hits + 1, "served from memory past near ttlMs");
  await cache.close();
  own.destroy();
});

Near("SIEVE keeps hit entries over one-time ones, and maxBytes bounds the encoded size", () => {
  const entry = (size: number): StoredEntry => ({
    value: 1,
    negative: false,
    publishedAt: 0,
    freshMs: 1,
    staleMs: 0,
    ifErrorMs: 0,
    loadMs: 0,
    id: "i",
    epoch: "e",
    tags: [],
    tagVersions: [],
    size,
  });
  const tier = new SieveTier(3, 1000, () => 0);
  tier.set("hot", entry(10), 1);
  tier.set("a", entry(10), 1);
  tier.set("b", entry(10), 1);
  assert.ok(tier.get("hot") !== undefined);
  tier.set("c", entry(10), 1);
  tier.set("d", entry(10), 1);
  assert.ok(tier.get("hot") !== undefined, "the visited entry survived two evictions");
  assert.is(tier.size, 3);
  const small = new SieveTier(100, 25, () => 0);
  small.set("x", entry(10), 1);
  small.set("y", entry(10), 1);
  small.set("z", entry(10), 1);
  assert.equal([small.size, small.bytes], [2, 20]);
  small.set("huge", entry(26), 1);
  assert.is(small.get("huge"), undefined, "an entry larger than maxBytes is never held");
});

Near.run();
