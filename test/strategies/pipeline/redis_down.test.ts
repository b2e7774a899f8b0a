/**
 * `onRedisDown: "local"`: while Redis cannot be reached, a get is served
 * from this process (a near entry kept through the outage, a value loaded
 * and kept, or one coalesced load per identity), nothing is stored, and no
 * get after the first failure waits for the dead server; back up, gets read
 * Redis again and what was loaded meanwhile never overwrites a newer value.
 * And in either mode a value Redis refused to store serves this process'
 * gets of its identity instead of a load per get.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect } from "../../../resp/client.ts";
import { TimeoutError } from "../../../resp/errors.ts";
import { coalesce } from "../../../strategies/coalesce.ts";
import { lease } from "../../../strategies/lease.ts";
import { limit } from "../../../strategies/limit.ts";
import { OverloadedError } from "../../../strategies/errors.ts";
import { near } from "../../../strategies/near.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import { cacheStatus } from "../../../strategies/pipeline/report/cache_status.ts";
import { rejects } from "../../support/assert.ts";
import { useRedis } from "../../support/fixture.ts";
import { startRedis } from "../../support/redis_server.ts";
import { swr } from "../../../strategies/swr.ts";
import { counting, events, heldNotModified, origin, untilServerMoved } from "../../support/strategies.ts";
import { barrier, deferred, until } from "../../support/wait.ts";

const Down = suite("onRedisDown");
const db = useRedis(Down, { prefix: "down" });

Down("'local' needs coalesce(), and onRedisDown and probeMs are checked", async () => {
  await rejects(
    () => pipeline({ redis: db.redis, ttlMs: 1000, onRedisDown: "local" }, lease()),
    TypeError,
    `Cannot create pipeline: onRedisDown "local" needs coalesce(), so that while Redis is down each identity is loaded once in this process, not once per caller`,
  );
  await rejects(
    () => pipeline({ redis: db.redis, ttlMs: 1000, onRedisDown: "fallback" as never }, coalesce()),
    TypeError,
    `Cannot create pipeline: 'onRedisDown' must be "error" or "local", got "fallback"`,
  );
  await rejects(
    () => pipeline({ redis: db.redis, ttlMs: 1000, probeMs: 0 }, coalesce()),
    RangeError,
    "Cannot create pipeline: 'probeMs' must be a positive integer, got 0",
  );
});

Down(
  "Redis killed: gets are served from this process, one load per identity, nothing stored, no get waits",
  async () => {
    const server = await startRedis();
    const redis = await connect({ url: server.url, resp: 3, commandTimeoutMs: 200 });
    const wire = counting(redis, { connected: true });
    const ev = events();
    // A clock of our own moves the cache past probeMs without a sleep.
    let skew = 0;
    const now = () => performance.now() + skew;
    const cache = pipeline<string>(
      { redis: wire as never, ttlMs: 60_000, namespace: "d", onRedisDown: "local", onEvent: ev.onEvent, now },
      coalesce(),
      lease(),
    );
    try {
      assert.is(await cache.get("before", () => "stored"), "stored");
      await server.kill();
      // The first get finds Redis gone, and is served anyway.
      const o = origin((n) => `local ${n}`);
      const first = await cache.getEntry("k", o.load);
      assert.equal([first.value, first.source, first.stored, first.degraded], [
        "local 1",
        "origin",
        false,
        "redis-down",
      ]);
      assert.is(cacheStatus(first), "herdless; fwd=miss; detail=redis-down");
      await ev.reach("redis-down", 1);
      // From then on no get waits for Redis: 50 at once send nothing, and the value loaded is served again.
      const sentBefore = wire.sent;
      const gate = barrier(50);
      const values = await Promise.all(Array.from({ length: 50 }, async () => {
        await gate.arrive();
        return cache.get("k", o.load);
      }));
      assert.equal(new Set(values), new Set(["local 1"]));
      assert.is(o.calls, 1, "origin calls for k while Redis is down");
      // A cold identity: 20 concurrent callers, one load (coalesce()).
      const cold = origin(() => "cold");
      const cgate = barrier(20);
      await Promise.all(Array.from({ length: 20 }, async () => {
        await cgate.arrive();
        return cache.get("cold", cold.load);
      }));
      assert.is(cold.calls, 1, "origin calls for a cold identity");
      assert.is(wire.sent, sentBefore, "a get sent a command to a dead Redis");
      // Past probeMs: the client says it is not connected, so no get probes (it would only wait in the
      // client's queue for commandTimeoutMs); its reconnect ends the outage.
      skew += 1_001;
      assert.is(await cache.get("k", o.load), "local 1");
      assert.is(wire.sent, sentBefore, "a get probed a client that said it was not connected");
      // Every get served without Redis is counted: the first, the 50, the 20, the one past probeMs.
      assert.is(cache.stats().degraded, 72);
      assert.equal(ev.seen.filter((e) => e.type === "redis-down").length, 1);
      // Back up. The client reconnects (this counting wrapper passes on its
      // connected flag, not its events), a get probes Redis once per probeMs and
      // finds it answering; gets read Redis again; nothing loaded while down was stored.
      await server.restart();
      await until(async () => (await cache.get("k", o.load), ev.count("redis-up") > 0), 5_000, 50);
      assert.is(await redis.send(["EXISTS", cache.keys("cold").data]), 0, "a value loaded while down was stored");
      await redis.send(["FLUSHALL"]);
      const after = origin(() => "fresh from the origin");
      assert.is(await cache.get("k", after.load), "fresh from the origin");
      assert.is(after.calls, 1);
      const up = ev.seen.find((e) => e.type === "redis-up");
      assert.ok(up !== undefined && up.type === "redis-up" && up.downMs >= 0);
    } finally {
      await cache.close({ timeoutMs: 1000 });
      redis.destroy();
      await server.stop();
    }
  },
);

Down("a near entry is kept through the outage and served stale, then dropped when Redis is back", async () => {
  const server = await startRedis();
  const redis = await connect({ url: server.url, resp: 3, commandTimeoutMs: 200 });
  const ev = events();
  const cache = pipeline<string>(
    { redis, ttlMs: 60_000, namespace: "n", onRedisDown: "local", onEvent: ev.onEvent },
    near(),
    coalesce(),
    lease(),
  );
  try {
    assert.is(await cache.get("k", () => "v1"), "v1");
    assert.is(await cache.get("k", () => "v1"), "v1");
    const nearHits = cache.stats().nearHits;
    const lost = new Promise<void>((resolve) => {
      const stop = redis.onEvent((e) => e.type === "disconnect" && (stop(), resolve()));
    });
    await server.kill();
    // The client has seen the connection go: until then a near hit is a plain hit.
    await lost;
    const o = origin(() => "should not load");
    const served = await cache.getEntry("k", o.load);
    assert.equal([served.value, served.source, served.stale, served.degraded], ["v1", "near", true, "redis-down"]);
    assert.is(o.calls, 0, "the origin was called for an entry held near");
    assert.ok(cache.stats().nearHits > nearHits);
    await server.restart();
    await ev.reach("redis-up", 1);
    // Redis came back empty: the entry kept through the outage is not served as current.
    const after = origin(() => "v2");
    assert.is(await cache.get("k", after.load), "v2");
    assert.is(after.calls, 1);
  } finally {
    await cache.close({ timeoutMs: 1000 });
    redis.destroy();
    await server.stop();
  }
});

Down(
  "a silent server (SIGSTOP): a command timeout opens the outage, one probe per probeMs closes it, even after a probe its caller's deadline ended",
  async () => {
    const server = await startRedis();
    const redis = await connect({ url: server.url, resp: 3, commandTimeoutMs: 100 });
    // Send-only, as an adapter: nothing says whether it is connected, so only a probe ends the outage.
    const wire = counting(redis);
    const ev = events();
    let skew = 0;
    const now = () => performance.now() + skew;
    const cache = pipeline<string>(
      { redis: wire, ttlMs: 60_000, namespace: "s", onRedisDown: "local", probeMs: 200, onEvent: ev.onEvent, now },
      coalesce(),
    );
    try {
      assert.is(await cache.get("warm", () => "v"), "v");
      server.signal("SIGSTOP");
      assert.is(await cache.get("k", () => "local"), "local");
      await ev.reach("redis-down", 1);
      const down = ev.seen.find((e) => e.type === "redis-down");
      assert.match(String(down?.type === "redis-down" ? (down.error as Error).message : ""), /commandTimeoutMs/);
      // Before probeMs, no get reads Redis.
      const reads = wire.reads;
      for (let i = 0; i < 10; i++) assert.is(await cache.get("k", () => "again"), "local");
      assert.is(wire.reads, reads, "a get read a silent Redis before probeMs");
      // Past probeMs one get probes; its caller's own deadline, shorter than commandTimeoutMs, ends it first.
      skew += 201;
      await rejects(() => cache.get("k", () => "never", { timeoutMs: 20 }), TimeoutError, /'timeoutMs' of 20 ms/);
      assert.ok(wire.reads > reads, "the probe was sent");
      // That probe told nothing: the next get probes again, finds Redis answering, and the outage ends.
      server.signal("SIGCONT");
      assert.is(await cache.get("warm", () => "not stored"), "v");
      await ev.reach("redis-up", 1);
    } finally {
      server.signal("SIGCONT");
      await cache.close({ timeoutMs: 1000 });
      redis.destroy();
      await server.stop();
    }
  },
);

Down("'error' (the default): a dead Redis is an error in bounded time, and the origin is never called", async () => {
  const server = await startRedis();
  const redis = await connect({ url: server.url, resp: 3, commandTimeoutMs: 100, reconnect: false });
  const cache = pipeline<string>({ redis, ttlMs: 60_000, namespace: "e" }, coalesce(), lease());
  try {
    assert.is(await cache.get("warm", () => "v"), "v");
    await server.kill();
    let calls = 0;
    await rejects(() => cache.get("k", () => (calls++, "v")), Error);
    assert.is(calls, 0);
  } finally {
    await cache.close({ timeoutMs: 1000 });
    redis.destroy();
    await server.stop();
  }
});

Down(
  "writes refused (OOM): the value loaded serves this process' gets of its identity, one load, either mode",
  async () => {
    const server = await startRedis({ args: ["--maxmemory-policy", "noeviction"] });
    const redis = await connect({ url: server.url, resp: 3 });
    try {
      for (const mode of ["error", "local"] as const) {
        const cache = pipeline<string>(
          { redis, ttlMs: 60_000, namespace: `oom-${mode}`, onRedisDown: mode },
          coalesce(),
          lease(),
        );
        // The namespace's epoch exists before writes are refused, as in a cache that ran before.
        assert.is(await cache.get("before", () => "v"), "v");
        // Nothing more fits: every write is refused with OOM.
        assert.is(await redis.send(["CONFIG", "SET", "maxmemory", "1"]), "OK");
        try {
          const o = origin((n) => `loaded ${n}`);
          const first = await cache.getEntry("k", o.load);
          assert.equal([first.value, first.stored, first.degraded], ["loaded 1", false, "write-refused"]);
          for (let i = 0; i < 20; i++) assert.is(await cache.get("k", o.load), "loaded 1");
          assert.is(o.calls, 1, `origin calls while writes are refused (${mode})`);
        } finally {
          assert.is(await redis.send(["CONFIG", "SET", "maxmemory", "0"]), "OK");
        }
        // Writes accepted again: another process' newer value (begun clearly after the load here: past the
        // 20 ms within which two processes' loads count as simultaneous, and past the kept value's mark, which may
        // be up to twice this cache's clock error late) is what this one serves from then on.
        const otherRedis = await connect({ url: server.url, resp: 3 });
        const other = pipeline<string>({ redis: otherRedis, ttlMs: 60_000, namespace: `oom-${mode}` });
        try {
          await untilServerMoved(redis, 250);
          await other.set("k", "newer");
          assert.is(await cache.get("k", () => "not called"), "newer");
        } finally {
          await other.close();
          otherRedis.destroy();
          await cache.close();
        }
      }
    } finally {
      redis.destroy();
      await server.stop();
    }
  },
);

Down(
  "writes refused (READONLY, a replica): the value loaded serves this process' gets of its identity, one load",
  async () => {
    const server = await startRedis();
    const redis = await connect({ url: server.url, resp: 3 });
    const cache = pipeline<string>(
      { redis, ttlMs: 60_000, namespace: "ro", onRedisDown: "local" },
      coalesce(),
      lease(),
    );
    try {
      // The namespace's epoch exists, as on a replica of the master the cache ran on. Then the server becomes a
      // replica of a master that never answers: it keeps its data and serves reads, and refuses every write.
      assert.is(await cache.get("before", () => "v"), "v");
      assert.is(await redis.send(["REPLICAOF", "127.0.0.1", "1"]), "OK");
      const refused = await redis.send(["SET", "x", "1"]).then(() => undefined, (e: Error) => e.message);
      assert.match(String(refused), /^READONLY/, "the server refuses writes");
      const o = origin((n) => `loaded ${n}`);
      const first = await cache.getEntry("k", o.load);
      assert.equal([first.value, first.stored, first.degraded], ["loaded 1", false, "write-refused"]);
      for (let i = 0; i < 20; i++) assert.is(await cache.get("k", o.load), "loaded 1");
      assert.is(o.calls, 1, "origin calls while the replica refuses writes");
      // The load served uncached is counted; the gets after it are hits of the value kept here.
      assert.is(cache.stats().degraded, 1);
    } finally {
      await redis.send(["REPLICAOF", "NO", "ONE"]);
      await cache.close();
      redis.destroy();
      await server.stop();
    }
  },
);

Down(
  "Redis killed under limit(): loads while down run at most 'concurrency' at once, and the rest are shed",
  async () => {
    const server = await startRedis();
    const redis = await connect({ url: server.url, resp: 3, commandTimeoutMs: 200 });
    const bound = limit({ concurrency: 2 });
    const cache = pipeline<string>(
      { redis, ttlMs: 60_000, namespace: "lim", onRedisDown: "local" },
      coalesce(),
      lease(),
      bound,
    );
    try {
      assert.is(await cache.get("before", () => "stored"), "stored");
      await server.kill();
      const hold = deferred();
      const o = origin((n) => `local ${n}`);
      o.hold = hold.promise;
      const gets = ["a", "b", "c", "d"].map((id) => cache.get(id, o.load));
      await o.called(2);
      const settled = Promise.allSettled(gets);
      await until(() => cache.stats().shed === 2);
      assert.is(bound.active, 2, "loads running at once while Redis is down");
      hold.resolve();
      const results = await settled;
      assert.equal(results.filter((r) => r.status === "fulfilled").length, 2);
      const shed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected").map((r) => r.reason);
      assert.ok(shed.every((e) => e instanceof OverloadedError), String(shed));
      assert.is(o.calls, 2);
    } finally {
      await cache.close({ timeoutMs: 1000 });
      redis.destroy();
      await server.stop();
    }
  },
);

Down("a lease waiter caught waiting when Redis dies is served from this process: one load, not an error", async () => {
  const server = await startRedis();
  const ownerRedis = await connect({ url: server.url, resp: 3, commandTimeoutMs: 200 });
  const waiterRedis = await connect({ url: server.url, resp: 3, commandTimeoutMs: 200 });
  const ev = events();
  const owner = pipeline<string>({ redis: ownerRedis, ttlMs: 60_000, namespace: "lw" }, lease({ leaseMs: 30_000 }));
  const waiter = pipeline<string>(
    { redis: waiterRedis, ttlMs: 60_000, namespace: "lw", onRedisDown: "local", onEvent: ev.onEvent },
    coalesce(),
    lease({ leaseMs: 30_000, waitMs: 10_000 }),
  );
  const hold = deferred();
  const held = origin(() => "owner's");
  held.hold = hold.promise;
  try {
    const owned = owner.get("k", held.load).catch((e: unknown) => e);
    await held.called();
    const local = origin(() => "loaded while down");
    const waiting = waiter.getEntry("k", local.load);
    await ev.reach("wait", 1);
    assert.is(local.calls, 0, "the waiter waits for the owner while Redis is up");
    await server.kill();
    const served = await waiting;
    assert.equal([served.value, served.stored, served.degraded], ["loaded while down", false, "redis-down"]);
    assert.is(local.calls, 1);
    hold.resolve();
    await owned;
  } finally {
    hold.resolve();
    await Promise.all([owner.close({ timeoutMs: 1000 }), waiter.close({ timeoutMs: 1000 })]);
    ownerRedis.destroy();
    waiterRedis.destroy();
    await server.stop();
  }
});

Down(
  "Redis killed while the origin loads: the value loaded is served and kept, not loaded again (get and getMany)",
  async () => {
    const server = await startRedis();
    const redis = await connect({ url: server.url, resp: 3, commandTimeoutMs: 200 });
    const ev = events();
    const cache = pipeline<string>(
      { redis, ttlMs: 60_000, namespace: "mid", onRedisDown: "local", onEvent: ev.onEvent },
      coalesce(),
      lease(),
    );
    const hold = deferred();
    const one = origin(() => "loaded once");
    one.hold = hold.promise;
    const many = origin((n) => `many ${n}`);
    many.hold = hold.promise;
    try {
      assert.is(await cache.get("warm", () => "v"), "v");
      // Both loads hold their leases, read while Redis answered, when it dies.
      const single = cache.getEntry("k", one.load);
      const batch = cache.getMany(["a", "b"], (ids, ctx) => Promise.all(ids.map(() => many.load(ctx))));
      await one.called();
      await many.called(2);
      await server.kill();
      hold.resolve();
      const served = await single;
      assert.equal([served.value, served.stored, served.degraded], ["loaded once", false, "redis-down"]);
      assert.equal(await batch, ["many 1", "many 2"]);
      await ev.reach("redis-down", 1);
      // Kept: gets while Redis is down serve what was loaded, and call no origin.
      assert.is(await cache.get("k", () => "loaded again"), "loaded once");
      assert.equal(await cache.getMany(["a", "b"], () => Promise.resolve(["again", "again"])), ["many 1", "many 2"]);
      assert.is(one.calls, 1, "origin calls for k");
      assert.is(many.calls, 2, "origin calls for a and b");
    } finally {
      hold.resolve();
      await cache.close({ timeoutMs: 1000 });
      redis.destroy();
      await server.stop();
    }
  },
);

Down(
  "getMany: an identity caught waiting for a lease when Redis dies is loaded here, once, and the batch resolves",
  async () => {
    const server = await startRedis();
    const ownerRedis = await connect({ url: server.url, resp: 3, commandTimeoutMs: 200 });
    const batchRedis = await connect({ url: server.url, resp: 3, commandTimeoutMs: 200 });
    const ev = events();
    const owner = pipeline<string>({ redis: ownerRedis, ttlMs: 60_000, namespace: "lwm" }, lease({ leaseMs: 30_000 }));
    const batch = pipeline<string>(
      { redis: batchRedis, ttlMs: 60_000, namespace: "lwm", onRedisDown: "local", onEvent: ev.onEvent },
      coalesce(),
      lease({ leaseMs: 30_000, waitMs: 10_000 }),
    );
    const hold = deferred();
    const held = origin(() => "owner's");
    held.hold = hold.promise;
    const asked: string[][] = [];
    try {
      const owned = owner.get("a", held.load).catch((e: unknown) => e);
      await held.called();
      const values = batch.getMany(["a", "b"], (ids) => {
        asked.push(ids.map(String));
        return Promise.resolve(ids.map((id) => `${String(id)} loaded here`));
      });
      // b is loaded and stored while Redis answers; a waits for the owner's lease.
      await ev.reach("wait", 1);
      await until(async () => (await batch.peek("b")) === "b loaded here");
      assert.equal(asked, [["b"]]);
      await server.kill();
      assert.equal(await values, ["a loaded here", "b loaded here"]);
      assert.equal(asked, [["b"], ["a"]], "a loaded once, here, after Redis died");
      assert.ok(ev.seen.some((e) => e.type === "degraded" && e.key === batch.keys("a").data));
      hold.resolve();
      await owned;
    } finally {
      hold.resolve();
      await Promise.all([owner.close({ timeoutMs: 1000 }), batch.close({ timeoutMs: 1000 })]);
      ownerRedis.destroy();
      batchRedis.destroy();
      await server.stop();
    }
  },
);

Down(
  "Redis killed while a conditional refresh runs: notModified() serves the previous value, kept, not an error",
  async () => {
    const server = await startRedis();
    const redis = await connect({ url: server.url, resp: 3, commandTimeoutMs: 200 });
    const ev = events();
    const cache = pipeline<string>(
      { redis, ttlMs: 60_000, namespace: "cnd", onRedisDown: "local", onEvent: ev.onEvent },
      swr({ staleMs: 0, ifErrorMs: 60_000 }),
      coalesce(),
      lease(),
    );
    const republish = heldNotModified();
    try {
      await cache.set("k", "v1");
      // Expired, it stays the fallback: the next get loads in the foreground with it as ctx.previous.
      await cache.expire("k");
      const refreshed = cache.getEntry("k", republish.load);
      await republish.called;
      await server.kill();
      republish.release();
      const served = await refreshed;
      assert.equal([served.value, served.stored, served.degraded], ["v1", false, "redis-down"]);
      await ev.reach("redis-down", 1);
      assert.is(await cache.get("k", () => "loaded again"), "v1", "the previous value, kept through the outage");
      assert.is(republish.calls, 1);
    } finally {
      republish.release();
      await cache.close({ timeoutMs: 1000 });
      redis.destroy();
      await server.stop();
    }
  },
);

Down.run();
