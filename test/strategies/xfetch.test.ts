import { suite } from "uvu";
import * as assert from "uvu/assert";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { swr } from "../../strategies/swr.ts";
import { xfetch } from "../../strategies/xfetch.ts";
import type { Cache } from "../../strategies/cache.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import { events, origin, plant } from "../support/strategies.ts";
import { deferred } from "../support/wait.ts";

const Xfetch = suite("xfetch()");
const db = useRedis(Xfetch, { prefix: "xf", clients: 2 });

Xfetch("xfetch() rejects a beta that is not a positive finite number", async () => {
  for (const beta of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
    await rejects(
      () => xfetch({ beta }),
      RangeError,
      `Cannot create xfetch: 'beta' must be a positive finite number, got ${beta}`,
    );
  }
  assert.is(xfetch().beta, 1);
});

/** Store an entry whose last load took `loadMs`, with `freshMs` left. */
function planted(cache: Cache<unknown>, identity: string, loadMs: number, freshMs: number): Promise<void> {
  return plant(db.redis, cache, identity, { payload: '"current"', loadMs, freshMs });
}

Xfetch("random() = 0 never refreshes early, even with a slow load and little time left", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns(), random: () => 0 }, xfetch(), lease());
  await planted(cache, "k", 5000, 2000);
  const o = origin(() => "next");
  assert.is(await cache.get("k", o.load), "current");
  await cache.close();
  assert.is(o.calls, 0);
  assert.equal([cache.stats().hits, cache.stats().earlyRefreshes], [1, 0]);
});

Xfetch(
  "a read refreshes early when -delta * beta * ln(u) reaches the fresh time left, and returns the current value",
  async () => {
    // u = 1 - 0.9 = 0.1: -1000 * ln(0.1) = 2303 ms >= 2000 ms left.
    const cache = pipeline(
      { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), random: () => 0.9 },
      xfetch(),
      lease(),
    );
    const data = cache.keys("k").data;
    await planted(cache, "k", 1000, 2000);
    const hold = deferred();
    const o = origin(() => "next");
    o.hold = hold.promise;
    assert.is(await cache.get("k", o.load), "current", "the caller never waits for the refresh");
    await o.called();
    hold.resolve();
    await cache.close();
    assert.is(o.calls, 1);
    assert.equal([cache.stats().hits, cache.stats().earlyRefreshes, cache.stats().misses], [1, 1, 0]);
    assert.match(String(await db.redis.send(["GET", data])), /"next"$/);
    assert.ok(Number(await db.redis.send(["PTTL", data])) > 59_000);
    // A smaller beta waits longer: 0.5 * 2303 ms < 2000 ms left.
    const calm = pipeline(
      { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), random: () => 0.9 },
      xfetch({ beta: 0.5 }),
      lease(),
    );
    await planted(calm, "k", 1000, 2000);
    assert.is(await calm.get("k", o.load), "current");
    await calm.close();
    assert.is(calm.stats().earlyRefreshes, 0);
  },
);

Xfetch("an early refresh runs once across clients: the lease admits one refresher", async () => {
  const namespace = db.ns();
  const ev = events();
  const a = pipeline(
    { redis: db.redis, ttlMs: 60_000, namespace, random: () => 0.9, onEvent: ev.onEvent },
    xfetch(),
    coalesce(),
    lease(),
  );
  const b = pipeline(
    { redis: db.other, ttlMs: 60_000, namespace, random: () => 0.9, onEvent: ev.onEvent },
    xfetch(),
    coalesce(),
    lease(),
  );
  await planted(a, "k", 1000, 2000);
  const hold = deferred();
  const o = origin(() => "next");
  o.hold = hold.promise;
  assert.is(await a.get("k", o.load), "current");
  await o.called();
  // b decides to refresh too, finds the lease taken, and leaves it to a.
  assert.is(await b.get("k", o.load), "current");
  await b.close();
  hold.resolve();
  await a.close();
  assert.is(o.calls, 1);
  assert.is(a.stats().earlyRefreshes + b.stats().earlyRefreshes, 2);
  assert.is(ev.count("lease-won"), 1);
});

Xfetch(
  "earlyRefreshes counts refreshes started: a key already refreshing adds nothing, a dropped one is refreshesDropped",
  async () => {
    const ev = events();
    const cache = pipeline(
      { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), random: () => 0.9, onEvent: ev.onEvent },
      xfetch(),
      swr({ staleMs: 0, maxRefreshes: 1 }),
      lease(),
    );
    await planted(cache, "a", 1000, 2000);
    await planted(cache, "b", 1000, 2000);
    const hold = deferred();
    const o = origin(() => "next");
    o.hold = hold.promise;
    assert.is(await cache.get("a", o.load), "current");
    await o.called();
    // Both decide to refresh early: "a" is refreshing already, "b" finds the one slot taken.
    assert.is(await cache.get("a", o.load), "current");
    assert.is(await cache.get("b", o.load), "current");
    hold.resolve();
    await cache.close();
    const stats = cache.stats();
    assert.equal([stats.hits, stats.earlyRefreshes, stats.refreshesDropped, o.calls], [3, 1, 1, 1]);
    assert.is(ev.count("early-refresh"), 1);
  },
);

Xfetch(
  "under steady load over three TTL periods no caller sees a miss and about one load happens per period",
  async () => {
    const namespace = db.ns();
    // The origin's ~50 ms is the delta xfetch scales with: refreshes start a few
    // hundred ms before expiry, so a stalled event loop on a busy machine still
    // has room, while a 1 s TTL keeps that to about one refresh per period.
    const ttlMs = 1000;
    const a = pipeline({ redis: db.redis, ttlMs, namespace }, xfetch(), coalesce(), lease());
    const b = pipeline({ redis: db.other, ttlMs, namespace }, xfetch(), coalesce(), lease());
    let loads = 0;
    const load = () => new Promise<number>((r) => setTimeout(() => r(++loads), 50));
    await a.get("hot", load); // Warm-up: the one cold miss.
    const warm = { a: a.stats().misses, b: b.stats().misses };
    const start = performance.now();
    let reads = 0;
    const reader = async (cache: typeof a) => {
      // Bounded: three TTL periods of back-to-back reads, and never more than 250,000 reads.
      while (performance.now() - start < 3 * ttlMs && reads < 250_000) {
        reads++;
        await cache.get("hot", load);
      }
    };
    await Promise.all([reader(a), reader(a), reader(b), reader(b)]);
    await Promise.all([a.close(), b.close()]);
    assert.is(a.stats().misses - warm.a + b.stats().misses - warm.b, 0, "a caller saw the expiry");
    const refreshes = loads - 1;
    assert.ok(refreshes >= 2 && refreshes <= 6, `${refreshes} loads over 3 periods (${reads} reads)`);
  },
);

Xfetch.run();
