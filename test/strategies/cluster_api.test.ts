/**
 * The cache API beyond `get` on a Redis Cluster (3 primaries, 3 replicas):
 * `getMany` over keys on every primary, `set`/`peek` across two clients,
 * `clear()` and `invalidateTags()` whose single token key lives on one node
 * while the entries they invalidate live on all of them.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { lease } from "../../strategies/lease.ts";
import { near } from "../../strategies/near.ts";
import { swr } from "../../strategies/swr.ts";
import type { Cache } from "../../strategies/cache.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import type { Strategy } from "../../strategies/contract.ts";
import { type ClusterContext, twoProcessCluster, type TwoProcesses } from "../support/fixture.ts";
import { spread } from "../support/strategies.ts";
import { deferred, until } from "../support/wait.ts";

/** The shared cluster and two clients, as two processes would have (see {@linkcode TwoProcesses}). */
type Ctx = ClusterContext<TwoProcesses>;

const test = suite<Ctx>("the cache API on a cluster");
const shared = twoProcessCluster("ca");
shared.use(test, { last: true });

/** The same namespace through both clients. */
function caches(ctx: Ctx, make: () => Strategy[] = () => [lease()]): [Cache<string>, Cache<string>] {
  const namespace = shared.ns();
  return [
    pipeline<string>({ redis: ctx.a, ttlMs: 60_000, namespace }, ...make()),
    pipeline<string>({ redis: ctx.b, ttlMs: 60_000, namespace }, ...make()),
  ];
}

test("getMany reads keys on every primary, loads the misses in one call, then serves them all", async (ctx) => {
  const [one] = caches(ctx);
  const ids = spread(ctx.cluster, one, 3);
  const batches: string[][] = [];
  const loadMany = (missing: readonly unknown[]) => {
    batches.push(missing.map(String));
    return Promise.resolve(missing.map((id) => `v:${String(id)}`));
  };
  assert.equal(await one.getMany(ids, loadMany), ids.map((id) => `v:${id}`));
  assert.equal(batches, [ids], "one loadMany call for every miss, whatever node holds it");
  assert.equal(await one.getMany([...ids].reverse(), loadMany), [...ids].reverse().map((id) => `v:${id}`));
  assert.is(batches.length, 1, "the second call was all hits");
  await one.close();
});

test("two clients' concurrent getMany over overlapping sets load each identity once", async (ctx) => {
  const [one, two] = caches(ctx, () => [lease({ waitMs: 10_000 })]);
  const ids = spread(ctx.cluster, one, 4);
  const loaded = new Map<string, number>();
  const hold = deferred();
  const loadMany = async (missing: readonly unknown[]) => {
    for (const id of missing) loaded.set(String(id), (loaded.get(String(id)) ?? 0) + 1);
    await hold.promise;
    return missing.map((id) => `v:${String(id)}`);
  };
  const left = ids.slice(0, 9);
  const right = ids.slice(3);
  const calls = [one.getMany(left, loadMany), two.getMany(right, loadMany)];
  // Both batches are in their origin call before either publishes: the
  // leases, not the timing, keep the overlap from loading twice.
  await until(() => loaded.size === ids.length);
  hold.resolve();
  assert.equal(await Promise.all(calls), [left.map((id) => `v:${id}`), right.map((id) => `v:${id}`)]);
  assert.equal([...loaded.entries()].filter(([, count]) => count !== 1), [], "every identity loaded once");
  assert.is(loaded.size, ids.length);
  await Promise.all([one.close(), two.close()]);
});

test("set through one client is seen by peek and get through the other, on every primary", async (ctx) => {
  const [one, two] = caches(ctx);
  const ids = spread(ctx.cluster, one, 1);
  await Promise.all(ids.map((id) => one.set(id, `set:${id}`)));
  assert.equal(await Promise.all(ids.map((id) => two.peek(id))), ids.map((id) => `set:${id}`));
  assert.equal(await Promise.all(ids.map((id) => two.get(id, () => "never"))), ids.map((id) => `set:${id}`));
  await Promise.all([one.close(), two.close()]);
});

test("clear() makes the entries on every primary a miss for both clients, near tiers included", async (ctx) => {
  const namespace = shared.ns();
  const one = pipeline<string>({ redis: ctx.a, ttlMs: 60_000, namespace }, near({ maxEntries: 100 }), lease());
  const two = pipeline<string>({ redis: ctx.b, ttlMs: 60_000, namespace }, lease());
  const ids = spread(ctx.cluster, one, 2);
  for (const id of ids) await one.get(id, () => "old");
  for (const id of ids) assert.is(await one.get(id, () => "never"), "old");
  for (const id of ids) assert.is(await one.get(id, () => "never"), "old");
  assert.ok(one.stats().nearHits > 0, "the reader's near tier holds entries");
  await two.clear();
  // The reader learns of the new epoch by the invalidation of the epoch key,
  // one hop after clear() resolved (the window docs/near-cache.md names).
  await until(async () => (await one.peek(ids[0]!)) === undefined);
  assert.equal(await Promise.all(ids.map((id) => one.peek(id))), ids.map(() => undefined), "the reader's peek");
  assert.equal(await Promise.all(ids.map((id) => two.peek(id))), ids.map(() => undefined), "the writer's peek");
  assert.equal(await Promise.all(ids.map((id) => one.get(id, () => "new"))), ids.map(() => "new"));
  await Promise.all([one.close(), two.close()]);
});

test("invalidateTags() drops the tagged entries on every primary and leaves the others", async (ctx) => {
  const [one, two] = caches(ctx);
  const ids = spread(ctx.cluster, one, 2);
  const tagged = ids.filter((_, i) => i % 2 === 0);
  for (const id of ids) {
    await one.get(id, () => "old", tagged.includes(id) ? { tags: ["t"] } : {});
  }
  await two.invalidateTags(["t"]);
  // As for clear(): the reader learns the tag's new version one hop later.
  await until(async () => (await one.peek(tagged[0]!)) === undefined);
  const after = await Promise.all(ids.map((id) => one.peek(id)));
  assert.equal(after, ids.map((id) => tagged.includes(id) ? undefined : "old"));
  await Promise.all([one.close(), two.close()]);
});

test("expire(), notModified() and forceFresh on every primary, seen by the other client", async (ctx) => {
  const [one, two] = caches(ctx, () => [swr({ staleMs: 60_000 }), lease()]);
  const ids = spread(ctx.cluster, one, 2);
  for (const id of ids) {
    await one.get(id, (c) => {
      c.setEtag(`e-${id}`);
      return `v1:${id}`;
    });
  }
  for (const id of ids) await one.expire(id);
  // The other client sees each stale, and its refresh answers notModified().
  const etags: (string | undefined)[] = [];
  const stale = await Promise.all(ids.map((id) =>
    two.getEntry(id, (c) => {
      etags.push(c.previous?.etag);
      return c.notModified();
    })
  ));
  assert.ok(stale.every((r) => r.stale));
  await until(() => two.stats().notModified === ids.length);
  assert.equal(etags.sort(), ids.map((id) => `e-${id}`).sort());
  for (const id of ids) {
    const r = await one.getEntry(id, () => "never");
    assert.equal([r.value, r.stale], [`v1:${id}`, false]);
  }
  // forceFresh loads on whatever node holds the key; the other client reads it.
  for (const id of ids) assert.is(await two.get(id, () => `v2:${id}`, { forceFresh: true }), `v2:${id}`);
  for (const id of ids) assert.is(await one.get(id, () => "never"), `v2:${id}`);
  assert.equal(
    await two.getMany(ids, (missing) => Promise.resolve(missing.map((id) => `v3:${String(id)}`)), {
      forceFresh: true,
    }),
    ids.map((id) => `v3:${id}`),
  );
  assert.is(one.stats().loads, ids.length);
  await one.close();
  await two.close();
});

test("a schema validates what each primary holds once, and reloads what it refuses", async (ctx) => {
  const namespace = shared.ns();
  const raw = pipeline<unknown>({ redis: ctx.b, ttlMs: 60_000, namespace });
  // A Standard Schema written by hand: a number, doubled.
  const doubled = {
    "~standard": {
      version: 1 as const,
      vendor: "test",
      validate: (v: unknown) => typeof v === "number" ? { value: v * 2 } : { issues: [{ message: "not a number" }] },
    },
  };
  const cache = pipeline<number>({ redis: ctx.a, ttlMs: 60_000, namespace, schema: doubled }, near());
  const ids = spread(ctx.cluster, cache, 2);
  for (const [i, id] of ids.entries()) await raw.set(id, i % 2 === 0 ? 10 : "bad");
  const values = await cache.getMany(ids, (missing) => Promise.resolve(missing.map(() => 7)));
  assert.equal(values, ids.map((_, i) => (i % 2 === 0 ? 20 : 14)));
  assert.is(cache.stats().invalid, ids.length / 2);
  assert.equal(
    await raw.getMany(ids, () => Promise.reject(new Error("never"))),
    ids.map((_, i) => (i % 2 === 0 ? 10 : 7)),
  );
  await raw.close();
  await cache.close();
});

test.run();
