/**
 * A Redis that refuses writes: full under `maxmemory` with
 * `noeviction` (OOM), or a replica (READONLY). Reads still work there, so the
 * cache fails open by default: the origin's value is served uncached, one
 * load per process (coalesce() shares it in-process), counted in `degraded`
 * and evented. With `failOpen: false` the Redis error fails the call.
 * An unreachable Redis fails closed either way (test/faults/kill.test.ts).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, type RedisClient } from "../../resp/client.ts";
import { RedisReplyError } from "../../resp/errors.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import type { CacheEvent } from "../../strategies/events.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import { type RedisServer, startRedis } from "../support/redis_server.ts";
import { events, origin } from "../support/strategies.ts";
import { until } from "../support/wait.ts";

type Degraded = Extract<CacheEvent, { type: "degraded" }>;

const test = suite<{ server: RedisServer; redis: RedisClient; admin: RedisClient }>("Redis refuses writes");
const db = useRedis(test, { server: { args: ["--maxmemory-policy", "noeviction"] } });
test.before(async (ctx) => {
  ctx.admin = await db.client({});
});
test.after.each(async ({ admin }) => {
  await admin.send(["CONFIG", "SET", "maxmemory", "0"]);
});

/** Evict everything (as maxmemory would have), then refuse every write with OOM. */
async function full(admin: RedisClient): Promise<void> {
  await admin.send(["FLUSHALL"]);
  await admin.send(["CONFIG", "SET", "maxmemory", "1"]);
  await rejects(() => admin.send(["SET", "probe", "x"]), RedisReplyError, /^OOM /);
}

test("OOM: 10 concurrent gets share one origin call and get its value, uncached, counted once and evented", async ({ redis, admin }) => {
  const ev = events();
  const cache = pipeline({ redis, ttlMs: 60_000, namespace: "oom", onEvent: ev.onEvent }, coalesce(), lease());
  try {
    await full(admin);
    const o = origin((call) => `v${call}`);
    const gets = Array.from({ length: 10 }, () => cache.get("k", o.load));
    assert.equal(await Promise.all(gets), Array(10).fill("v1"));
    assert.is(o.calls, 1);
    const s = cache.stats();
    assert.equal([s.degraded, s.coalesced, s.loads, s.leasesWon, s.loadErrors], [1, 9, 1, 0, 0]);
    const degraded = ev.seen.filter((e): e is Degraded => e.type === "degraded");
    assert.is(degraded.length, 1);
    assert.is(degraded[0]!.key, cache.keys("k").data);
    assert.is((degraded[0]!.error as RedisReplyError).code, "OOM");
    assert.is(await admin.send(["DBSIZE"]), 0, "nothing was stored: no data, lease, epoch or tag key");
    // Nothing cached: the next get loads again (still one call for its wave).
    assert.is(await cache.get("k", o.load, { tags: ["t"] }), "v2");
    assert.equal([o.calls, cache.stats().degraded], [2, 2]);
    // Redis accepts writes again: the value is cached and then served.
    await admin.send(["CONFIG", "SET", "maxmemory", "0"]);
    assert.is(await cache.get("k", o.load), "v3");
    assert.is(await cache.get("k", o.load), "v3");
    assert.equal([o.calls, cache.stats().degraded, cache.stats().hits], [3, 2, 1]);
  } finally {
    await cache.close();
  }
});

test("OOM without lease(): the refused publication is degraded, the caller gets the origin's value", async ({ redis, admin }) => {
  const cache = pipeline({ redis, ttlMs: 60_000, namespace: "oom-plain" });
  try {
    await full(admin);
    assert.is(await cache.get("k", () => "v"), "v");
    assert.equal([cache.stats().degraded, cache.stats().loads, cache.stats().loadErrors], [1, 1, 0]);
    assert.is(await admin.send(["DBSIZE"]), 0);
  } finally {
    await cache.close();
  }
});

test("failOpen: false fails closed on OOM: the get rejects with the Redis error and the origin is not called", async ({ redis, admin }) => {
  await rejects(
    () => pipeline({ redis, ttlMs: 1000, failOpen: "yes" as never }),
    TypeError,
    "Cannot create pipeline: 'failOpen' must be a boolean",
  );
  const cache = pipeline({ redis, ttlMs: 60_000, namespace: "oom-closed", failOpen: false }, coalesce(), lease());
  try {
    await full(admin);
    const o = origin(() => "v");
    const error = await rejects(() => cache.get("k", o.load), RedisReplyError, /^OOM /);
    assert.is((error as RedisReplyError).code, "OOM");
    assert.equal([o.calls, cache.stats().degraded], [0, 0]);
  } finally {
    await cache.close();
  }
});

test("READONLY (a replica): stored values are still served; a miss is loaded once per process, uncached, counted", async ({ server, redis, admin }) => {
  // The first sync starts at once instead of after the default 5 s wait for more replicas.
  await admin.send(["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
  const replica = await startRedis({ args: ["--replicaof", "127.0.0.1", String(server.port)] });
  const onReplica = await connect({ url: replica.url, resp: 3 });
  const ev = events();
  const primary = pipeline({ redis, ttlMs: 60_000, namespace: "ro" });
  const cache = pipeline(
    { redis: onReplica, ttlMs: 60_000, namespace: "ro", onEvent: ev.onEvent },
    coalesce(),
    lease(),
  );
  try {
    assert.is(await primary.get("stored", () => "from primary"), "from primary");
    // Replication is a real event to wait for, not a race.
    await until(async () => (await onReplica.send(["EXISTS", primary.keys("stored").data])) === 1);
    const o = origin((call) => `v${call}`);
    assert.is(await cache.get("stored", o.load), "from primary");
    const gets = Array.from({ length: 5 }, () => cache.get("missing", o.load));
    assert.equal(await Promise.all(gets), Array(5).fill("v1"));
    assert.is(o.calls, 1);
    assert.equal([cache.stats().hits, cache.stats().degraded, cache.stats().coalesced], [1, 1, 4]);
    const degraded = ev.seen.find((e): e is Degraded => e.type === "degraded");
    assert.is((degraded?.error as RedisReplyError).code, "READONLY");
    assert.is(await onReplica.send(["EXISTS", cache.keys("missing").data]), 0);
  } finally {
    await Promise.all([cache.close(), primary.close()]);
    onReplica.destroy();
    await replica.stop();
  }
});

test.run();
