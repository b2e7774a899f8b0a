/**
 * One `getMany` call makes one `loadMany` call for all its misses, whatever
 * the fill strategies: none, in-process only (`coalesce()`, `near()`), or
 * across processes (`lease()`). A chain that reaches the origin without an
 * await must not send its identity off alone. The strategies still protect
 * each identity: one a concurrent `get` is loading is waited for, not loaded.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { coalesce } from "../../../../strategies/coalesce.ts";
import { lease } from "../../../../strategies/lease.ts";
import { near } from "../../../../strategies/near.ts";
import { pipeline } from "../../../../strategies/pipeline/pipeline.ts";
import { swr } from "../../../../strategies/swr.ts";
import type { Identity } from "../../../../strategies/types.ts";
import type { Strategy } from "../../../../strategies/contract.ts";
import { rejects } from "../../../support/assert.ts";
import { useRedis } from "../../../support/fixture.ts";
import { origin, plant } from "../../../support/strategies.ts";
import { deferred } from "../../../support/wait.ts";

/** A loadMany that records the identities of each call; `first` resolves at its first call. */
function batchOrigin() {
  const batches: Identity[][] = [];
  const first = deferred();
  return {
    batches,
    first: first.promise,
    loadMany: (missing: readonly Identity[]) => {
      batches.push([...missing]);
      first.resolve();
      return Promise.resolve(missing.map((m) => `loaded ${JSON.stringify(m)}`));
    },
  };
}

interface Combination {
  readonly name: string;
  readonly strategies: () => Strategy[];
  /** A concurrent get of this process is waited for (coalesce() or lease()). */
  readonly inProcess: boolean;
  /** A concurrent get of another process is waited for (lease()). */
  readonly crossProcess: boolean;
}

const combinations: Combination[] = [
  { name: "no strategy", strategies: () => [], inProcess: false, crossProcess: false },
  { name: "coalesce()", strategies: () => [coalesce()], inProcess: true, crossProcess: false },
  { name: "lease()", strategies: () => [lease({ waitMs: 10_000 })], inProcess: true, crossProcess: true },
  {
    name: "coalesce(), lease()",
    strategies: () => [coalesce(), lease({ waitMs: 10_000 })],
    inProcess: true,
    crossProcess: true,
  },
  { name: "near()", strategies: () => [near()], inProcess: false, crossProcess: false },
  { name: "near(), coalesce()", strategies: () => [near(), coalesce()], inProcess: true, crossProcess: false },
  {
    name: "near(), coalesce(), lease()",
    strategies: () => [near(), coalesce(), lease({ waitMs: 10_000 })],
    inProcess: true,
    crossProcess: true,
  },
];

const Batch = suite("getMany(): one loadMany call per call, for every combination of strategies");
const db = useRedis(Batch, { prefix: "batchstr", clients: 2 });

for (const c of combinations) {
  Batch(`${c.name}: every miss goes to one loadMany call, and a hit to none`, async () => {
    const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, ...c.strategies());
    await cache.set("cached", "from the cache");
    const o = batchOrigin();
    const ids: Identity[] = ["a", ["b", 1], "cached", "c", "a"];
    assert.equal(await cache.getMany(ids, o.loadMany), [
      'loaded "a"',
      'loaded ["b",1]',
      "from the cache",
      'loaded "c"',
      'loaded "a"',
    ]);
    assert.equal(o.batches, [["a", ["b", 1], "c"]]);
    // Published: the same call again loads nothing.
    assert.equal((await cache.getMany(ids, o.loadMany))[1], 'loaded ["b",1]');
    assert.is(o.batches.length, 1);
    await cache.close();
  });

  Batch(`${c.name} with swr(): the stale identities are refreshed in one loadMany call`, async () => {
    const cache = pipeline(
      { redis: db.redis, ttlMs: 60_000, namespace: db.ns() },
      swr({ staleMs: 60_000 }),
      ...c.strategies(),
    );
    for (const id of ["a", "b", "c"]) {
      await plant(db.redis, cache, id, { payload: `"old ${id}"`, freshMs: 1000, staleMs: 60_000, ageMs: 2000 });
    }
    const o = batchOrigin();
    assert.equal(await cache.getMany(["a", "b", "c"], o.loadMany), ["old a", "old b", "old c"]);
    // close() waits for the background refresh.
    await cache.close();
    assert.equal(o.batches, [["a", "b", "c"]]);
  });

  if (c.inProcess) {
    Batch(`${c.name}: an identity a get of this process is loading is waited for, the rest load together`, async () => {
      const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, ...c.strategies());
      const hold = deferred();
      const single = origin(() => "the get's b");
      single.hold = hold.promise;
      const get = cache.get("b", single.load);
      await single.called();
      const o = batchOrigin();
      const many = cache.getMany(["a", "b", "c", "d"], o.loadMany);
      await o.first;
      assert.equal(o.batches, [["a", "c", "d"]]);
      hold.resolve();
      assert.equal(await many, ['loaded "a"', "the get's b", 'loaded "c"', 'loaded "d"']);
      assert.is(await get, "the get's b");
      assert.equal([single.calls, o.batches.length], [1, 1]);
      await cache.close();
    });
  }

  if (c.crossProcess) {
    Batch(`${c.name}: an identity another process is loading is waited for, the rest load together`, async () => {
      const namespace = db.ns();
      const theirs = pipeline({ redis: db.other, ttlMs: 60_000, namespace }, lease());
      const ours = pipeline({ redis: db.redis, ttlMs: 60_000, namespace }, ...c.strategies());
      const hold = deferred();
      const single = origin(() => "their b");
      single.hold = hold.promise;
      const get = theirs.get("b", single.load);
      await single.called();
      const o = batchOrigin();
      const many = ours.getMany(["a", "b", "c", "d"], o.loadMany);
      await o.first;
      assert.equal(o.batches, [["a", "c", "d"]]);
      hold.resolve();
      assert.equal(await many, ['loaded "a"', "their b", 'loaded "c"', 'loaded "d"']);
      assert.is(await get, "their b");
      assert.equal([single.calls, o.batches.length], [1, 1]);
      await Promise.all([theirs.close(), ours.close()]);
    });
  }
}

Batch(
  "a fill hook that throws instead of rejecting fails its identity; the others still load in one call",
  async () => {
    // A hand-written strategy whose hook is not async: it throws synchronously.
    const picky: Strategy = {
      name: "picky",
      fill: (next) => (req) => {
        if (req.identity === "b") throw new Error("picky refuses b");
        return next({ ...req });
      },
    };
    const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, picky);
    const o = batchOrigin();
    await rejects(() => cache.getMany(["a", "b", "c"], o.loadMany), Error, "picky refuses b");
    // getMany settles every identity before it answers.
    assert.equal(o.batches, [["a", "c"]]);
    assert.equal(await cache.getMany(["a", "c"], o.loadMany), ['loaded "a"', 'loaded "c"']);
    // close() waits for every fill: none is left waiting for b.
    await cache.close();
  },
);

Batch.run();
