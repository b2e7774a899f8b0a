import { suite } from "uvu";
import * as assert from "uvu/assert";
import { TimeoutError } from "../../../../resp/errors.ts";
import { coalesce } from "../../../../strategies/coalesce.ts";
import { ClosedError } from "../../../../strategies/errors.ts";
import { lease } from "../../../../strategies/lease.ts";
import { limit } from "../../../../strategies/limit.ts";
import { pipeline } from "../../../../strategies/pipeline/pipeline.ts";
import type { Identity } from "../../../../strategies/types.ts";
import { runWorkers } from "../../../support/processes.ts";
import { rejects } from "../../../support/assert.ts";
import { useRedis } from "../../../support/fixture.ts";
import { origin } from "../../../support/strategies.ts";
import { deferred, until } from "../../../support/wait.ts";

async function calls(command: string): Promise<number> {
  const info = String(await db.other.send(["INFO", "commandstats"]));
  const match = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info);
  return match === null ? 0 : Number(match[1]);
}

/** A loadMany that records its calls and answers `value of <identity>`. */
function batchOrigin(hold?: Promise<unknown>) {
  const batches: Identity[][] = [];
  const signals: AbortSignal[] = [];
  return {
    batches,
    signals,
    loadMany: async (missing: readonly Identity[], { signal }: { signal: AbortSignal }) => {
      batches.push([...missing]);
      signals.push(signal);
      if (hold !== undefined) await hold;
      return missing.map((m) => `value of ${String(m)}`);
    },
  };
}

const Many = suite("getMany()");
const db = useRedis(Many, { prefix: "many", clients: 2 });

Many("getMany() reads every identity in one round trip and returns them aligned", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
  const ids = Array.from({ length: 50 }, (_, i) => `k${i}`);
  await Promise.all(ids.map((id) => cache.set(id, `v-${id}`)));
  // Warm the versions and the server clock: a later read costs one command.
  await cache.peek("k0");
  const [writes, gets] = [db.redis.writes, await calls("get")];
  const o = batchOrigin();
  assert.equal(await cache.getMany(ids, o.loadMany), ids.map((id) => `v-${id}`));
  assert.is(db.redis.writes - writes, 1, "one write (one round trip) for all the reads");
  const epochReads = (await calls("get")) - gets - ids.length;
  assert.ok(epochReads === 0 || epochReads === ids.length, `GETs besides the data keys: ${epochReads}`);
  assert.is(o.batches.length, 0);
  assert.is(cache.stats().hits, 50);
  await cache.close();
});

Many("getMany() with half the identities fresh loads the other half in one loadMany call, in order", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
  const ids = Array.from({ length: 10 }, (_, i) => `k${i}`);
  for (const id of ids.filter((_, i) => i % 2 === 0)) await cache.set(id, `cached ${id}`);
  const o = batchOrigin();
  const values = await cache.getMany(ids, o.loadMany);
  assert.equal(values, ids.map((id, i) => (i % 2 === 0 ? `cached ${id}` : `value of ${id}`)));
  assert.equal(o.batches, [["k1", "k3", "k5", "k7", "k9"]]);
  assert.equal(await cache.getMany(ids, o.loadMany), values);
  assert.is(o.batches.length, 1, "all cached now");
  await cache.close();
});

Many("getMany() reads and loads a duplicate once, and returns undefined for not found", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns(), negativeTtlMs: 10_000 }, lease());
  const batches: Identity[][] = [];
  const values = await cache.getMany(["a", ["b", 1], "a", "gone", ["b", 1]], (missing) => {
    batches.push([...missing]);
    return Promise.resolve(missing.map((m) => (m === "gone" ? undefined : JSON.stringify(m))));
  });
  assert.equal(values, ['"a"', '["b",1]', '"a"', undefined, '["b",1]']);
  assert.equal(batches, [["a", ["b", 1], "gone"]]);
  // The not-found is cached as such.
  assert.equal(await cache.getMany(["gone"], () => Promise.reject(new Error("loaded again"))), [undefined]);
  await cache.close();
});

Many(
  "a loadMany that resolves the wrong number of values is a TypeError naming both, and nothing is cached",
  async () => {
    const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
    await rejects(
      () => cache.getMany(["a", "b", "c"], () => Promise.resolve(["only one"])),
      TypeError,
      "Cannot getMany: loadMany resolved 1 values for 3 identities; nothing was cached",
    );
    for (const id of ["a", "b", "c"]) {
      assert.is(
        await db.redis.send(["EXISTS", cache.keys(id).data, cache.keys(id).lease]),
        0,
        `${id} cached or still leased`,
      );
    }
    await rejects(
      () => cache.getMany(["a"], () => Promise.resolve("nope" as never)),
      TypeError,
      "Cannot getMany: loadMany resolved a string for 1 identities; nothing was cached",
    );
    await cache.close();
  },
);

Many("an identity another process is loading is waited for, not loaded again", async () => {
  const namespace = db.ns();
  const theirs = pipeline({ redis: db.other, ttlMs: 60_000, namespace }, lease());
  const ours = pipeline({ redis: db.redis, ttlMs: 60_000, namespace }, coalesce(), lease({ waitMs: 10_000 }));
  const hold = deferred();
  const single = origin(() => "theirs");
  single.hold = hold.promise;
  const loading = theirs.get("b", single.load);
  await single.called();
  const o = batchOrigin();
  const many = ours.getMany(["a", "b", "c"], o.loadMany);
  // The batch loads what it may without waiting for "b".
  await until(() => o.batches.length === 1);
  assert.equal(o.batches, [["a", "c"]]);
  hold.resolve();
  assert.equal(await many, ["value of a", "theirs", "value of c"]);
  assert.is(await loading, "theirs");
  assert.is(o.batches.length, 1);
  await Promise.all([theirs.close(), ours.close()]);
});

Many("an identity whose owner failed is taken over in one more loadMany call", async () => {
  const namespace = db.ns();
  const ours = pipeline(
    { redis: db.redis, ttlMs: 60_000, namespace },
    coalesce(),
    lease({ waitMs: 10_000, pollMs: 20 }),
  );
  // Two leases held by a process that then crashes: they expire.
  await db.redis.send(["SET", ours.keys("b").lease, "crashed", "PX", 300]);
  await db.redis.send(["SET", ours.keys("d").lease, "crashed", "PX", 300]);
  const o = batchOrigin();
  assert.equal(await ours.getMany(["a", "b", "c", "d"], o.loadMany), [
    "value of a",
    "value of b",
    "value of c",
    "value of d",
  ]);
  assert.equal(o.batches, [["a", "c"], ["b", "d"]]);
  await ours.close();
});

Many("coalesce() shares an identity between a getMany and a get of this process", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
  const hold = deferred();
  const o = batchOrigin(hold.promise);
  const many = cache.getMany(["a", "b"], o.loadMany);
  await until(() => o.batches.length === 1);
  const single = origin(() => "never");
  const get = cache.get("a", single.load);
  hold.resolve();
  assert.equal(await many, ["value of a", "value of b"]);
  assert.is(await get, "value of a");
  assert.is(single.calls, 0);
  await cache.close();
});

Many("limit() counts one loadMany call as one slot", async () => {
  const strategy = limit({ concurrency: 1 });
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease(), strategy);
  const o = batchOrigin();
  assert.equal(await cache.getMany(["a", "b", "c"], o.loadMany), ["value of a", "value of b", "value of c"]);
  assert.equal([o.batches.length, strategy.active, cache.stats().shed], [1, 0, 0]);
  await cache.close();
});

Many("loadMany's signal aborts when the caller gives up, and the values it loads are still published", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
  const hold = deferred();
  const o = batchOrigin(hold.promise);
  await rejects(
    () => cache.getMany(["a", "b"], o.loadMany, { timeoutMs: 50 }),
    TimeoutError,
    "The get of 2 identities timed out: 'timeoutMs' of 50 ms ran out",
  );
  assert.is(o.signals[0]!.aborted, true);
  hold.resolve();
  await cache.close();
  assert.is(await cache.peek("a").catch(() => "closed"), "closed");
  const reader = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: cache.keys("a").data.split(":")[0]! });
  assert.is(await reader.peek("a"), "value of a");
  await reader.close();
});

Many("close() waits for a running getMany", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
  const hold = deferred();
  const o = batchOrigin(hold.promise);
  const many = cache.getMany(["a", "b"], o.loadMany);
  await until(() => o.batches.length === 1);
  let closed = false;
  const closing = cache.close().then(() => (closed = true));
  await new Promise((r) => setImmediate(r));
  assert.is(closed, false);
  hold.resolve();
  assert.equal(await many, ["value of a", "value of b"]);
  await closing;
  await rejects(() => cache.getMany(["a"], o.loadMany), ClosedError, "Cannot getMany: the cache is closed");
});

Many("two OS processes calling getMany on overlapping sets load each identity exactly once", async () => {
  const namespace = db.ns();
  const sets = [
    Array.from({ length: 30 }, (_, i) => `k${i}`),
    Array.from({ length: 30 }, (_, i) => `k${i + 15}`),
    Array.from({ length: 30 }, (_, i) => `k${(i * 7) % 45}`),
    Array.from({ length: 30 }, (_, i) => `k${44 - i}`),
  ];
  const outputs = await runWorkers(
    db.other,
    new URL("./_worker.ts", import.meta.url),
    namespace,
    sets.map((ids, i) => [db.server.url, namespace, String(i), "getMany", ids.join(",")]),
  );
  const results = outputs.map((o) => JSON.parse(o.trim()) as { result: string[]; batches: number });
  results.forEach((r, i) => assert.equal(r.result, sets[i]!.map((id) => `value of ${id}`)));
  const counts = (await db.other.send(["HGETALL", `${namespace}:origin`])) as Record<string, string> | string[];
  const perIdentity = Array.isArray(counts)
    ? Object.fromEntries(counts.flatMap((v, i, a) => (i % 2 === 0 ? [[v, a[i + 1]]] : [])))
    : counts;
  const all = new Set(sets.flat());
  assert.is(Object.keys(perIdentity).length, all.size);
  assert.ok(Object.values(perIdentity).every((c) => c === "1"), JSON.stringify(perIdentity));
  assert.ok(results.every((r) => r.batches <= 2), `batches per process: ${results.map((r) => r.batches)}`);
});

Many("getMany() validates its arguments", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() });
  await rejects(
    () => cache.getMany("a" as never, () => Promise.resolve([])),
    TypeError,
    "Cannot getMany: 'identities' must be an array, got string",
  );
  await rejects(
    () => cache.getMany(["a"], "f" as never),
    TypeError,
    "Cannot getMany: 'loadMany' must be a function, got string",
  );
  await rejects(
    () => cache.getMany([""], () => Promise.resolve([])),
    TypeError,
    'Cannot derive keys: the identity must be a non-empty string or a non-empty array of strings and finite numbers, got ""',
  );
  assert.equal(await cache.getMany([], () => Promise.resolve([])), []);
  await cache.close();
});

Many.run();
