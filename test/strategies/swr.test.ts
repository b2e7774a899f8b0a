import { suite } from "uvu";
import * as assert from "uvu/assert";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { swr } from "../../strategies/swr.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import { events, origin, untilPastFresh } from "../support/strategies.ts";
import { deferred, until } from "../support/wait.ts";

const pttl = async (key: string) => Number(await db.redis.send(["PTTL", key]));

const Swr = suite("swr()");
const db = useRedis(Swr, { prefix: "swr", clients: 2 });

/** A cache whose "k" holds "v1" in its error window: fresh for 100 ms, then 10 s in which only a failed load serves it. */
async function inErrorWindow() {
  const cache = pipeline(
    { redis: db.redis, ttlMs: 100, namespace: db.ns() },
    swr({ staleMs: 0, ifErrorMs: 10_000 }),
    lease(),
  );
  await cache.get("k", () => "v1");
  await untilPastFresh(db.redis, cache, "k", 10_000);
  return cache;
}

Swr("swr() rejects bad windows and caps with messages naming the setting", async () => {
  await rejects(
    () => swr(undefined as never),
    RangeError,
    "Cannot create swr: 'staleMs' must be a non-negative integer, got undefined",
  );
  await rejects(
    () => swr({ staleMs: -1 }),
    RangeError,
    "Cannot create swr: 'staleMs' must be a non-negative integer, got -1",
  );
  await rejects(
    () => swr({ staleMs: 10, ifErrorMs: 0.5 }),
    RangeError,
    "Cannot create swr: 'ifErrorMs' must be a non-negative integer, got 0.5",
  );
  await rejects(
    () => swr({ staleMs: 10, maxRefreshes: 0 }),
    RangeError,
    "Cannot create swr: 'maxRefreshes' must be a positive integer, got 0",
  );
  const s = swr({ staleMs: 10 });
  assert.equal([s.staleMs, s.ifErrorMs, s.maxRefreshes], [10, 0, 16]);
});

Swr("a read in the stale window gets the stale value at once and starts one refresh across clients", async () => {
  const namespace = db.ns();
  const ev = events();
  const a = pipeline(
    { redis: db.redis, ttlMs: 100, namespace, onEvent: ev.onEvent },
    swr({ staleMs: 10_000 }),
    coalesce(),
    lease(),
  );
  const b = pipeline(
    { redis: db.other, ttlMs: 100, namespace, onEvent: ev.onEvent },
    swr({ staleMs: 10_000 }),
    coalesce(),
    lease(),
  );
  assert.is(await a.get("k", () => "v1"), "v1");
  const data = a.keys("k").data;
  assert.ok((await pttl(data)) > 10_000, "physical TTL = fresh + stale");
  // Real expiry of the fresh window, seen through the server's PTTL.
  await untilPastFresh(db.redis, a, "k", 10_000);
  const hold = deferred();
  const o = origin(() => "v2");
  o.hold = hold.promise;
  const values = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).get("k", o.load)));
  assert.equal(values, Array(20).fill("v1"), "nobody waits for the refresh");
  await o.called();
  hold.resolve();
  await Promise.all([a.close(), b.close()]);
  assert.is(o.calls, 1);
  assert.is(a.stats().stale + b.stats().stale, 20);
  assert.is(a.stats().misses + b.stats().misses, 1, "only the cold fill missed");
  assert.match(String(await db.redis.send(["GET", data])), /"v2"$/);
  assert.ok((await pttl(data)) > 10_000, "the refresh published a full fresh + stale lifetime");
});

Swr("a failed refresh keeps the stale value and never moves its final deadline", async () => {
  // A stale window longer than untilPastFresh's margin, so the read below falls inside it.
  const cache = pipeline({ redis: db.redis, ttlMs: 100, namespace: db.ns() }, swr({ staleMs: 1_500 }), lease());
  await cache.get("k", () => "v1");
  const data = cache.keys("k").data;
  await untilPastFresh(db.redis, cache, "k", 1_500);
  const before = await pttl(data);
  const boom = new Error("origin down");
  assert.is(await cache.get("k", () => Promise.reject(boom)), "v1");
  // Wait for the failed background refresh to finish.
  await until(() => cache.stats().refreshErrors === 1);
  assert.ok((await pttl(data)) <= before, "the deadline did not move");
  assert.equal([cache.stats().loadErrors, cache.stats().refreshErrors], [1, 1]);
  assert.match(String(await db.redis.send(["GET", data])), /"v1"$/);
  // At the final deadline the key is gone: the next read is a plain miss.
  await until(async () => (await db.redis.send(["EXISTS", data])) === 0);
  await rejects(() => cache.get("k", () => Promise.reject(boom)), Error, "origin down");
  assert.is(cache.stats().misses, 2);
  await cache.close();
});

Swr("in the error window a failed load serves the old value; a successful one replaces it", async () => {
  const cache = await inErrorWindow();
  const data = cache.keys("k").data;
  const boom = new Error("origin down");
  assert.is(await cache.get("k", () => Promise.reject(boom)), "v1");
  assert.equal([cache.stats().stale, cache.stats().loadErrors, cache.stats().misses], [1, 1, 2]);
  assert.ok((await pttl(data)) <= 10_000, "serving stale stored nothing");
  assert.is(await cache.get("k", () => "v2"), "v2");
  assert.is(await cache.get("k", () => "v3"), "v2");
  await cache.close();
});

Swr("a caller whose own deadline ends in the error window gets its error, not the stale value", async () => {
  const cache = await inErrorWindow();
  const controller = new AbortController();
  const hold = deferred<string>();
  const call = cache.get("k", () => hold.promise, { signal: controller.signal });
  controller.abort(new Error("left"));
  await rejects(() => call, Error, "left");
  hold.resolve("v2");
  await cache.close();
});

Swr("a caller whose timeoutMs runs out in the error window gets the stale value, not a TimeoutError", async () => {
  const cache = await inErrorWindow();
  const hold = deferred<string>();
  // The origin hangs: only the caller's own deadline can end this call.
  assert.is(await cache.get("k", () => hold.promise, { timeoutMs: 50 }), "v1");
  assert.is(await cache.get("k", () => hold.promise, { signal: AbortSignal.timeout(50) }), "v1");
  assert.is(cache.stats().stale, 2);
  hold.resolve("v2");
  await cache.close();
});

Swr("background refreshes are capped by maxRefreshes; the excess is dropped and counted", async () => {
  const cache = pipeline(
    { redis: db.redis, ttlMs: 100, namespace: db.ns() },
    swr({ staleMs: 10_000, maxRefreshes: 2 }),
    lease(),
  );
  const ids = ["a", "b", "c", "d", "e"];
  for (const id of ids) await cache.get(id, () => `${id}1`);
  for (const id of ids) await untilPastFresh(db.redis, cache, id, 10_000);
  const hold = deferred();
  const o = origin(() => "fresh");
  o.hold = hold.promise;
  for (const id of ids) assert.is(await cache.get(id, o.load), `${id}1`);
  // A second stale read of a key already refreshing starts nothing new.
  assert.is(await cache.get("a", o.load), "a1");
  assert.equal([o.calls, cache.stats().refreshesDropped], [2, 3]);
  hold.resolve();
  await cache.close();
  assert.is(o.calls, 2);
});

Swr("close() drains background refreshes before it resolves", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 100, namespace: db.ns() }, swr({ staleMs: 10_000 }), lease());
  await cache.get("k", () => "v1");
  const data = cache.keys("k").data;
  await untilPastFresh(db.redis, cache, "k", 10_000);
  const hold = deferred();
  const o = origin(() => "v2");
  o.hold = hold.promise;
  assert.is(await cache.get("k", o.load), "v1");
  await o.called();
  let closed = false;
  const closing = cache.close().then(() => (closed = true));
  // A twin with no refresh running goes through the same close() steps (no
  // I/O: neither cache waited on a lease, so neither subscribed) and started
  // later: once it has closed, a close() that did not drain would have too.
  const twin = pipeline({ redis: db.redis, ttlMs: 100, namespace: db.ns() }, swr({ staleMs: 10_000 }), lease());
  await twin.close();
  assert.is(closed, false, "close() resolved while a refresh was running");
  hold.resolve();
  await closing;
  assert.match(String(await db.redis.send(["GET", data])), /"v2"$/);
});

Swr.run();
