import { suite } from "uvu";
import * as assert from "uvu/assert";
import { coalesce } from "../../../../strategies/coalesce.ts";
import { jitter } from "../../../../strategies/jitter.ts";
import { lease } from "../../../../strategies/lease.ts";
import { pipeline } from "../../../../strategies/pipeline/pipeline.ts";
import { swr } from "../../../../strategies/swr.ts";
import { rejects } from "../../../support/assert.ts";
import { useRedis } from "../../../support/fixture.ts";
import { events, origin } from "../../../support/strategies.ts";
import { deferred } from "../../../support/wait.ts";

const Set = suite("set()");
const db = useRedis(Set, { prefix: "set", clients: 2 });

Set("set() writes through: the next get is a hit and never calls the origin", async () => {
  const cache = pipeline<{ n: number }>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
  await cache.set(["user", 1], { n: 1 });
  const o = origin(() => ({ n: 2 }));
  assert.equal(await cache.get(["user", 1], o.load), { n: 1 });
  assert.is(o.calls, 0);
  assert.equal([cache.stats().sets, cache.stats().hits, cache.stats().loads], [1, 1, 0]);
  // Another process sees it too.
  const theirs = pipeline<{ n: number }>({
    redis: db.other,
    ttlMs: 60_000,
    namespace: cache.keys("x").data.split(":")[0]!,
  });
  assert.equal(await theirs.peek(["user", 1]), { n: 1 });
  await Promise.all([cache.close(), theirs.close()]);
});

Set("set() applies the write strategies' windows: jitter below the TTL, then the swr windows", async () => {
  const cache = pipeline(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), random: () => 0 },
    swr({ staleMs: 10_000, ifErrorMs: 5_000 }),
    jitter({ spreadMs: 30_000 }),
  );
  await cache.set("k", "v", { ttlMs: 40_000 });
  // Fresh 40 s - 30 s jitter (random 0) = 10 s, then 10 s stale and 5 s error window.
  const pttl = Number(await db.redis.send(["PTTL", cache.keys("k").data]));
  assert.ok(pttl > 24_000 && pttl <= 25_000, `pttl ${pttl}`);
  assert.is(await cache.peek("k"), "v");
  await cache.close();
});

Set("set() of undefined is a TypeError naming invalidate(), and bad options name the setting", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() });
  await rejects(
    () => cache.set("k", undefined),
    TypeError,
    "Cannot set: the value is undefined; use invalidate() to drop a value",
  );
  await rejects(
    () => cache.set("k", 1, { ttlMs: 0 }),
    RangeError,
    "Cannot set: 'ttlMs' must be a positive integer, got 0",
  );
  await rejects(
    () => cache.set("k", 1, { tags: [""] }),
    TypeError,
    `Cannot set: 'tags[0]' must be a non-empty string, got ""`,
  );
  await rejects(
    () => cache.set("k", 1, { tags: "t" as never }),
    TypeError,
    "Cannot set: 'tags' must be an array of strings, got string",
  );
  assert.is(await db.redis.send(["EXISTS", cache.keys("k").data]), 0);
  await cache.close();
});

Set("a load running when set() lands cannot publish over it, and its caller gets the set value", async () => {
  const ev = events();
  const cache = pipeline(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), onEvent: ev.onEvent },
    coalesce(),
    lease(),
  );
  const hold = deferred();
  const o = origin(() => "loaded before the set");
  o.hold = hold.promise;
  const loading = cache.get("k", o.load);
  await o.called();
  await cache.set("k", "set while loading");
  hold.resolve();
  assert.is(await loading, "set while loading");
  assert.is(await cache.peek("k"), "set while loading");
  assert.is(cache.stats().lateRejected, 1);
  const late = ev.seen.find((e) => e.type === "late-publish") as { reason: string; first: boolean };
  assert.ok(late.first && /lease expired or was taken/.test(late.reason), JSON.stringify(late));
  await cache.close();
});

Set("a waiter polling only every 60 s gets the set value at once: set() announces", async () => {
  const namespace = db.ns();
  const ev = events();
  const owner = pipeline({ redis: db.other, ttlMs: 60_000, namespace }, lease({ leaseMs: 30_000 }));
  const waiterCache = pipeline(
    { redis: db.redis, ttlMs: 60_000, namespace, onEvent: ev.onEvent },
    lease({ pollMs: 60_000, waitMs: 30_000 }),
  );
  const writer = pipeline({ redis: db.other, ttlMs: 60_000, namespace });
  const hold = deferred();
  const o = origin(() => "owner's");
  o.hold = hold.promise;
  const owning = owner.get("k", o.load);
  await o.called();
  const never = origin(() => "never");
  // Its next look would come after 30 s at the earliest, past its 5 s deadline.
  const waiting = waiterCache.get("k", never.load, { timeoutMs: 5_000 });
  await ev.reach("wait", 1);
  await writer.set("k", "from set()");
  assert.is(await waiting, "from set()");
  hold.resolve();
  assert.is(await owning, "from set()", "the owner's publication was rejected and it returned the stored value");
  assert.is(never.calls, 0);
  await Promise.all([owner.close(), waiterCache.close(), writer.close()]);
});

Set.run();
