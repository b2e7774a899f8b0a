/**
 * `expire()`: the fresh window ends now in every process (near tiers too),
 * whatever a reader's estimate of the server's clock; the entry stays as
 * swr's stale fallback, its lease goes with it, and an entry without a
 * stale life is deleted.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { coalesce } from "../../../strategies/coalesce.ts";
import { lease } from "../../../strategies/lease.ts";
import { near } from "../../../strategies/near.ts";
import { decodeEnvelope } from "../../../strategies/pipeline/read/envelope.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import { swr } from "../../../strategies/swr.ts";
import { rejects } from "../../support/assert.ts";
import { useRedis } from "../../support/fixture.ts";
import { events } from "../../support/strategies.ts";
import { deferred, until } from "../../support/wait.ts";

const Expire = suite("expire()");
const db = useRedis(Expire, { prefix: "expire", clients: 2 });

const envelope = async (key: string) => decodeEnvelope(String(await db.redis.send(["GET", key])));
const pttl = async (key: string) => Number(await db.redis.send(["PTTL", key]));

Expire("with swr(), the next get is served stale and refreshes once; the one after is fresh", async () => {
  const ev = events();
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), onEvent: ev.onEvent },
    swr({ staleMs: 30_000 }),
    coalesce(),
    lease(),
  );
  await cache.set("k", "old");
  await cache.expire("k");
  const stale = await cache.getEntry("k", () => "new");
  assert.equal([stale.value, stale.stale], ["old", true]);
  await ev.reach("load-end", 1);
  const fresh = await cache.getEntry("k", () => "never");
  assert.equal([fresh.value, fresh.stale], ["new", false]);
  assert.equal([cache.stats().loads, cache.stats().stale], [1, 1]);
  await cache.close();
});

Expire("the windows: fresh 0, the stale window runs from now, the key lives stale + error", async () => {
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 600_000, namespace: db.ns() },
    swr({ staleMs: 30_000, ifErrorMs: 20_000 }),
  );
  await cache.set("k", "v");
  const key = cache.keys("k").data;
  const before = await envelope(key);
  await cache.expire("k");
  const after = await envelope(key);
  const age = Date.now() - before.publishedAt;
  assert.is(after.freshMs, 0);
  // The stale window absorbs the time the entry was fresh: it ends staleMs from now.
  assert.ok(after.staleMs >= 30_000 && after.staleMs <= 30_000 + age + 1_000, `staleMs ${after.staleMs}`);
  assert.equal([after.ifErrorMs, after.id, after.payload, after.publishedAt], [
    20_000,
    before.id,
    before.payload,
    before.publishedAt,
  ]);
  const ttl = await pttl(key);
  assert.ok(ttl > 49_000 && ttl <= 50_000, `PTTL ${ttl}`);
  // Expiring again changes nothing: the entry is no longer fresh.
  await cache.expire("k");
  assert.equal(await envelope(key), after);
  assert.ok(await pttl(key) <= ttl);
  await cache.close();
});

Expire("with an error window only, the error window absorbs the fresh time and serves a failed load", async () => {
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 600_000, namespace: db.ns() },
    swr({ staleMs: 0, ifErrorMs: 20_000 }),
  );
  await cache.set("k", "v");
  await cache.expire("k");
  const e = await envelope(cache.keys("k").data);
  assert.equal([e.freshMs, e.staleMs, e.ifErrorMs >= 20_000], [0, 0, true]);
  const r = await cache.getEntry("k", () => Promise.reject(new Error("origin down")));
  assert.equal([r.value, r.stale], ["v", true]);
  await cache.close();
});

Expire("without swr(), the entry is deleted: the next get loads, as after invalidate()", async () => {
  const cache = pipeline<string | undefined>({
    redis: db.redis,
    ttlMs: 60_000,
    namespace: db.ns(),
    negativeTtlMs: 60_000,
  });
  await cache.set("k", "old");
  await cache.expire("k");
  assert.is(await db.redis.send(["EXISTS", cache.keys("k").data]), 0);
  assert.is(await cache.get("k", () => "new"), "new");
  // A not-found has no stale life either.
  assert.is(await cache.get("none", () => undefined), undefined);
  await cache.expire("none");
  assert.is(await db.redis.send(["EXISTS", cache.keys("none").data]), 0);
  await cache.expire("never-stored");
  await cache.close();
  await rejects(() => cache.expire("k"), Error, "Cannot expire: the cache is closed");
});

Expire("a get after expire() never sees the entry fresh, however far behind the clock estimate runs", async () => {
  let behind = 0;
  const now = () => performance.now() - behind;
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns(), now }, swr({ staleMs: 60_000 }));
  await cache.set("k", "v");
  assert.is((await cache.getEntry("k", () => "never")).stale, false, "the clock is measured");
  // From here this client's estimate of the server's clock runs 10 s behind:
  // the entry reads as published 10 s in the future.
  behind = 10_000;
  await cache.expire("k");
  const r = await cache.getEntry("k", () => "new");
  assert.equal([r.value, r.stale, r.freshForMs <= 0], ["v", true, true]);
  await cache.close();
});

Expire("the lease goes with it: a load begun before cannot publish its snapshot as fresh", async () => {
  const ev = events();
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), onEvent: ev.onEvent },
    swr({ staleMs: 60_000 }),
    lease(),
  );
  await cache.set("k", "v1");
  await cache.expire("k");
  // The first get is served stale and refreshes under the lease; hold that load.
  const held = deferred();
  const called = deferred();
  assert.is(
    await cache.get("k", async () => {
      called.resolve();
      await held.promise;
      return "snapshot";
    }),
    "v1",
  );
  await called.promise;
  // The source changes again: expire() while the refresh still runs.
  await cache.expire("k");
  held.resolve();
  await ev.reach("late-publish", 1);
  const e = await envelope(cache.keys("k").data);
  assert.equal([e.payload, e.freshMs], ['"v1"', 0], "the refresh's publication was refused");
  await cache.close();
});

for (const resp of [3, 2] as const) {
  Expire(`every process' near tier drops the entry, and its next get is stale (RESP${resp})`, async () => {
    const namespace = db.ns();
    const a = resp === 3 ? db.redis : await db.client({ resp: 2 });
    const b = resp === 3 ? db.other : await db.client({ resp: 2 });
    const evB = events();
    const one = pipeline<string>({ redis: a, ttlMs: 60_000, namespace }, near(), swr({ staleMs: 60_000 }));
    const two = pipeline<string>(
      { redis: b, ttlMs: 60_000, namespace, onEvent: evB.onEvent },
      near(),
      swr({ staleMs: 60_000 }),
      lease(),
    );
    await one.set("k", "v");
    await until(async () => (await two.getEntry("k", () => "never")).source === "near");
    assert.equal([(await one.getEntry("k", () => "never")).source], ["redis"]);
    await one.expire("k");
    // This process never sees it fresh once expire() resolved.
    const down = () => Promise.reject(new Error("origin down"));
    assert.is((await one.getEntry("k", down)).stale, true);
    // The other hears of it (tracking push, or the announcement) and drops it.
    await evB.reach("near-invalidation", 1);
    const r = await two.getEntry("k", down);
    assert.equal([r.source, r.stale], ["redis", true]);
    await one.close();
    await two.close();
  });
}

Expire.run();
