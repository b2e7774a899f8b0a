import { suite } from "uvu";
import * as assert from "uvu/assert";
import { lease } from "../../../strategies/lease.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import { swr } from "../../../strategies/swr.ts";
import { xfetch } from "../../../strategies/xfetch.ts";
import type { Strategy } from "../../../strategies/contract.ts";
import { useRedis } from "../../support/fixture.ts";
import { plant, type Planted } from "../../support/strategies.ts";

const Peek = suite("peek()");
const db = useRedis(Peek, { prefix: "peek" });

Peek("peek() returns a fresh value and undefined for a missing one, never loading", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, lease());
  assert.is(await cache.peek("k"), undefined);
  await cache.set("k", { v: 1 });
  assert.equal(await cache.peek("k"), { v: 1 });
  assert.is(await db.redis.send(["EXISTS", cache.keys("missing").lease]), 0);
  assert.is(await cache.peek("missing"), undefined);
  assert.is(await db.redis.send(["EXISTS", cache.keys("missing").lease]), 0, "no lease taken");
  const stats = cache.stats();
  assert.equal([stats.peeks, stats.hits, stats.misses, stats.loads], [3, 0, 0, 0]);
  await cache.close();
});

// Entries a get would serve and refresh in the background: peek() serves them and refreshes nothing.
const servedAsIs: [string, () => Strategy[], Planted][] = [
  [
    "peek() serves the stale window without starting a refresh",
    () => [swr({ staleMs: 60_000 }), lease()],
    { payload: '"stale"', freshMs: 1_000, staleMs: 60_000, ageMs: 2_000 },
  ],
  [
    "peek() of an entry due for an early refresh returns it and starts nothing",
    // random() close to 1 and a slow load: xfetch() would refresh this entry now.
    () => [xfetch(), lease()],
    { payload: '"due"', freshMs: 1_000, loadMs: 5_000 },
  ],
];
for (const [name, strategies, planted] of servedAsIs) {
  Peek(name, async () => {
    const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns(), random: () => 0.99 }, ...strategies());
    await plant(db.redis, cache, "k", planted);
    assert.is(await cache.peek("k"), JSON.parse(planted.payload!));
    await cache.close();
    assert.equal([cache.stats().loads, cache.stats().earlyRefreshes], [0, 0]);
  });
}

Peek("peek() inside the stale-if-error window is undefined: only a failed reload may serve it", async () => {
  const cache = pipeline(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns() },
    swr({ staleMs: 0, ifErrorMs: 60_000 }),
    lease(),
  );
  await plant(db.redis, cache, "k", { payload: '"old"', freshMs: 1_000, ifErrorMs: 60_000, ageMs: 2_000 });
  assert.is(await cache.peek("k"), undefined);
  // The same entry does serve a get whose reload fails.
  assert.is(await cache.get("k", () => Promise.reject(new Error("origin down"))), "old");
  await cache.close();
});

Peek.run();
