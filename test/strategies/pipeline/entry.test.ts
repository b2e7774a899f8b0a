import { suite } from "uvu";
import * as assert from "uvu/assert";
import { cacheStatus } from "../../../strategies/pipeline/report/cache_status.ts";
import { coalesce } from "../../../strategies/coalesce.ts";
import { lease } from "../../../strategies/lease.ts";
import { near } from "../../../strategies/near.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import type { CacheResult } from "../../../strategies/types.ts";
import { swr } from "../../../strategies/swr.ts";
import { rejects } from "../../support/assert.ts";
import { useRedis } from "../../support/fixture.ts";
import { origin, plant } from "../../support/strategies.ts";
import { deferred, until } from "../../support/wait.ts";

const GetEntry = suite("getEntry()");
const db = useRedis(GetEntry, { prefix: "entry", clients: 2 });

const fields = (r: CacheResult<unknown>) => [r.value, r.source, r.stale, r.stored];

GetEntry(
  "a load reports origin, age 0 and stored; a hit reports redis with the value's age in server time",
  async () => {
    const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() });
    const loaded = await cache.getEntry("k", () => "v");
    assert.equal(fields(loaded), ["v", "origin", false, true]);
    assert.is(loaded.ageMs, 0);
    assert.is(loaded.freshForMs, 60_000);
    assert.is(cacheStatus(loaded), "herdless; fwd=miss; stored");
    await plant(db.redis, cache, "old", { payload: '"old"', freshMs: 60_000, ageMs: 5_000 });
    const hit = await cache.getEntry("old", () => "never");
    assert.equal(fields(hit), ["old", "redis", false, false]);
    // Within the clock estimate's error (half a round trip) of 5 s old: a busy machine ran it 1 ms under.
    assert.ok(hit.ageMs >= 4_950 && hit.ageMs < 6_000, `ageMs ${hit.ageMs}`);
    assert.is(hit.ageMs + hit.freshForMs, 60_000);
    assert.is(cacheStatus(hit), `herdless; hit; ttl=${Math.floor(hit.freshForMs / 1000)}`);
    assert.ok(/^herdless; hit; ttl=5[45]$/.test(cacheStatus(hit)));
    // The same counters as get.
    const stats = cache.stats();
    assert.equal([stats.hits, stats.misses, stats.loads], [1, 1, 1]);
    await cache.close();
  },
);

GetEntry("a stale hit reports stale with a fresh time at or below zero, a negative ttl in Cache-Status", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, swr({ staleMs: 60_000 }));
  await plant(db.redis, cache, "s", { payload: '"stale"', freshMs: 1_000, staleMs: 60_000, ageMs: 4_500 });
  const held = deferred<string>();
  const r = await cache.getEntry("s", () => held.promise);
  assert.equal(fields(r), ["stale", "redis", true, false]);
  // Server time comes from the clock estimate, whose error is up to half a
  // round trip: the bounds allow that much (a fresh value would be > 0).
  assert.ok(r.freshForMs <= -3_450 && r.freshForMs > -4_550, `freshForMs ${r.freshForMs}`);
  assert.match(cacheStatus(r), /^herdless; hit; ttl=-(4|5)$/);
  held.resolve("new");
  await cache.close();
});

GetEntry(
  "a not-found that is not cached reports origin, not stored; stale-if-error reports the old value stale",
  async () => {
    const cache = pipeline<string>(
      { redis: db.redis, ttlMs: 60_000, namespace: db.ns() },
      swr({ staleMs: 0, ifErrorMs: 60_000 }),
    );
    const none = await cache.getEntry("missing", () => undefined as never);
    assert.equal(fields(none), [undefined, "origin", false, false]);
    assert.is(cacheStatus(none), "herdless; fwd=miss");
    await plant(db.redis, cache, "e", { payload: '"old"', freshMs: 1_000, ifErrorMs: 60_000, ageMs: 2_000 });
    const r = await cache.getEntry("e", () => {
      throw new Error("origin down");
    });
    assert.equal(fields(r), ["old", "redis", true, false]);
    // Within the clock estimate's error (half a round trip) of 2 s old, 1 s past fresh.
    assert.ok(r.ageMs >= 1_950 && r.freshForMs <= -950, `ageMs ${r.ageMs}, freshForMs ${r.freshForMs}`);
    await cache.close();
  },
);

GetEntry(
  "a caller that joined another's load reports that load; a lease waiter reports redis with the value's age",
  async () => {
    const ns = db.ns();
    const a = pipeline<string>(
      { redis: db.redis, ttlMs: 60_000, namespace: ns },
      coalesce(),
      lease({ waitMs: 10_000 }),
    );
    const b = pipeline<string>(
      { redis: db.other, ttlMs: 60_000, namespace: ns },
      coalesce(),
      lease({ waitMs: 10_000 }),
    );
    const o = origin(() => "loaded");
    const gate = deferred<void>();
    o.hold = gate.promise;
    const owner = a.getEntry("k", o.load);
    await o.called(1);
    const joiner = a.getEntry("k", o.load);
    const waiter = b.getEntry("k", o.load);
    await until(() => b.stats().waits === 1 && a.stats().coalesced === 1);
    gate.resolve();
    const [own, joined, waited] = await Promise.all([owner, joiner, waiter]);
    assert.is(o.calls, 1);
    assert.equal(fields(own), ["loaded", "origin", false, true]);
    assert.equal(fields(joined), ["loaded", "origin", false, true]);
    assert.is(joined.ageMs, 0);
    assert.equal(fields(waited), ["loaded", "redis", false, false]);
    assert.ok(waited.ageMs >= 0 && waited.ageMs < 1_000);
    assert.is(waited.ageMs + waited.freshForMs, 60_000);
    await Promise.all([a.close(), b.close()]);
  },
);

GetEntry("a near hit reports near, and Cache-Status says so in detail", async () => {
  const redis = await db.client({ resp: 3 });
  const cache = pipeline<string>({ redis, ttlMs: 60_000, namespace: db.ns() }, near());
  await cache.get("n", () => "v");
  await cache.get("n", () => "v"); // the read that fills the near tier
  const r = await cache.getEntry("n", () => "never");
  assert.equal(fields(r), ["v", "near", false, false]);
  assert.match(cacheStatus(r), /^herdless; hit; ttl=(59|60); detail=near$/);
  await cache.close();
});

GetEntry("getEntry() obeys close() and validates like get()", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() });
  await rejects(() => cache.getEntry("k", "nope" as never), TypeError, /'loader'/);
  await rejects(() => cache.getEntry("k", () => "v", { ttlMs: 0 }), RangeError, /'ttlMs'/);
  await cache.close();
  await rejects(() => cache.getEntry("k", () => "v"), Error, /closed/);
});

GetEntry.run();
