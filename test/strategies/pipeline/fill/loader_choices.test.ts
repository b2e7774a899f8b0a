import { suite } from "uvu";
import * as assert from "uvu/assert";
import { coalesce } from "../../../../strategies/coalesce.ts";
import { jitter } from "../../../../strategies/jitter.ts";
import { lease } from "../../../../strategies/lease.ts";
import { decodeEnvelope } from "../../../../strategies/pipeline/read/envelope.ts";
import { pipeline } from "../../../../strategies/pipeline/pipeline.ts";
import { swr } from "../../../../strategies/swr.ts";
import type { LoaderContext } from "../../../../strategies/types.ts";
import { rejects } from "../../../support/assert.ts";
import { useRedis } from "../../../support/fixture.ts";
import { runWorkers } from "../../../support/processes.ts";
import { events, origin, plant } from "../../../support/strategies.ts";
import { deferred } from "../../../support/wait.ts";

const Context = suite("LoaderContext");
const db = useRedis(Context, { prefix: "loaderctx", clients: 2 });

const envelope = async (key: string) => decodeEnvelope(String(await db.redis.send(["GET", key])));
const exists = async (key: string) => Number(await db.redis.send(["EXISTS", key]));

Context("setTtlMs() replaces the TTL; the last call wins; swr and jitter windows apply to it", async () => {
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), random: () => 0 },
    swr({ staleMs: 1_000 }),
    jitter({ spreadMs: 100 }),
  );
  await cache.get("k", (ctx) => {
    ctx.setTtlMs(1_000);
    ctx.setTtlMs(5_000);
    return "v";
  });
  const e = await envelope(cache.keys("k").data);
  // jitter draws in [ttl - spread, ttl] from the chosen TTL, swr adds its window after it.
  assert.ok(e.freshMs >= 4_900 && e.freshMs <= 5_000, `freshMs ${e.freshMs}`);
  assert.is(e.staleMs, 1_000);
  const pttl = Number(await db.redis.send(["PTTL", cache.keys("k").data]));
  assert.ok(pttl > 5_000 && pttl <= 6_000, `PTTL ${pttl}`);
  await cache.close();
});

Context("a not-found keeps negativeTtlMs whatever setTtlMs() chose", async () => {
  const cache = pipeline<string | undefined>({
    redis: db.redis,
    ttlMs: 60_000,
    namespace: db.ns(),
    negativeTtlMs: 2_000,
  });
  await cache.get("none", (ctx) => {
    ctx.setTtlMs(50_000);
    return undefined;
  });
  const e = await envelope(cache.keys("none").data);
  assert.equal([e.negative, e.freshMs], [true, 2_000]);
  await cache.close();
});

Context("the setters validate at the call, naming the setting, and refuse once the loader settled", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, jitter({ spreadMs: 1_000 }));
  let kept: LoaderContext | undefined;
  const errors: unknown[] = [];
  await cache.get("k", (ctx) => {
    kept = ctx;
    for (const bad of [() => ctx.setTtlMs(-1), () => ctx.setTtlMs(1.5), () => ctx.setTags("a" as never)]) {
      try {
        bad();
      } catch (error) {
        errors.push(error);
      }
    }
    // A TTL the jitter spread does not fit is refused as a call's ttlMs is.
    try {
      ctx.setTtlMs(500);
    } catch (error) {
      errors.push(error);
    }
    return "v";
  });
  assert.is(errors.length, 4);
  assert.instance(errors[0], RangeError);
  assert.is((errors[0] as Error).message, "Cannot setTtlMs: 'ttlMs' must be a positive integer, got -1");
  assert.is((errors[1] as Error).message, "Cannot setTtlMs: 'ttlMs' must be a positive integer, got 1.5");
  assert.instance(errors[2], TypeError);
  assert.is((errors[2] as Error).message, "Cannot setTags: 'tags' must be an array of strings, got string");
  assert.instance(errors[3], RangeError);
  assert.match((errors[3] as Error).message, /spreadMs/);
  for (const late of [() => kept!.setTtlMs(1_000), () => kept!.setTags(["a"]), () => kept!.skip()]) {
    await rejects(
      late,
      TypeError,
      /^Cannot (setTtlMs|setTags|skip): the load is over \(call it before the loader settles\)$/,
    );
  }
  // The bad calls changed nothing: the value is stored with the pipeline's TTL.
  assert.ok((await envelope(cache.keys("k").data)).freshMs > 58_000);
  await cache.close();
});

Context("setTags() replaces the call's tags and catches invalidations from the moment it is called", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() });
  await cache.get("a", (ctx) => {
    ctx.setTags(["author:1"]);
    return "A";
  }, { tags: ["call-tag"] });
  assert.equal((await envelope(cache.keys("a").data)).tags, ["author:1"]);
  await cache.invalidateTags(["call-tag"]);
  assert.is(await cache.peek("a"), "A", "the call's tags were replaced");
  await cache.invalidateTags(["author:1"]);
  assert.is(await cache.peek("a"), undefined);
  // An invalidation after setTags() but before the load settles: the value is published, and is a miss.
  // author:2 has no version yet: the invalidation lands between setTags()'s read and its creation of one.
  const held = deferred<void>();
  const called = deferred<void>();
  const load = cache.get("b", async (ctx) => {
    ctx.setTags(["author:2"]);
    called.resolve();
    await held.promise;
    return "B";
  });
  await called.promise;
  await cache.invalidateTags(["author:2"]);
  held.resolve();
  assert.is(await load, "B");
  assert.is(await exists(cache.keys("b").data), 1);
  assert.is(await cache.peek("b"), undefined);
  await cache.close();
});

Context("skip() hands the value to every caller sharing the load, stores nothing and is counted", async () => {
  const log = events();
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), onEvent: log.onEvent },
    coalesce(),
    lease(),
  );
  const o = origin<string>(() => "error page");
  const gate = deferred<void>();
  o.hold = gate.promise;
  const skipping = (ctx: LoaderContext) => {
    ctx.skip();
    return o.load(ctx);
  };
  const first = cache.getEntry("k", skipping);
  await o.called(1);
  const rest = [cache.get("k", skipping), cache.get("k", skipping)];
  gate.resolve();
  const result = await first;
  assert.equal(await Promise.all(rest), ["error page", "error page"]);
  assert.equal([result.value, result.source, result.stored], ["error page", "origin", false]);
  assert.is(o.calls, 1);
  const keys = cache.keys("k");
  assert.is(await exists(keys.data), 0);
  assert.is(await exists(keys.lease), 0, "the lease was released");
  const stats = cache.stats();
  assert.equal([stats.skips, stats.loads, stats.coalesced], [1, 1, 2]);
  assert.is(log.count("skip"), 1);
  await cache.close();
});

// Found by the model test (model.test.ts): a skipped value is the one
// exception to value order inside a process. Not stored, it orders nothing:
// a set() that landed while the skipping load held its lease is served next,
// though the origin was read after it.
Context("skip(): after a skipped value, the next get serves what Redis holds, older or not", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
  let version = 0;
  const called = deferred<void>();
  const gate = deferred<void>();
  const loading = cache.getEntry("k", async (ctx) => {
    called.resolve();
    await gate.promise;
    ctx.skip();
    return `v${++version}`; // the origin read now: after the set below
  });
  await called.promise;
  await cache.set("k", `v${++version}`); // drops the lease: a publication would now be late
  gate.resolve();
  const result = await loading;
  assert.equal([result.value, result.source, result.stored], ["v2", "origin", false]);
  const next = await cache.getEntry("k", () => "never");
  assert.equal([next.value, next.source], ["v1", "redis"]);
  await cache.close();
});

Context("skip() in a refresh keeps the stored entry and its deadline", async () => {
  const log = events();
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), onEvent: log.onEvent },
    swr({ staleMs: 60_000 }),
    lease(),
  );
  await plant(db.redis, cache, "k", { payload: '"old"', freshMs: 1_000, staleMs: 60_000, ageMs: 2_000 });
  const key = cache.keys("k").data;
  const before = await envelope(key);
  const pttlBefore = Number(await db.redis.send(["PTTL", key]));
  assert.is(
    await cache.get("k", (ctx) => {
      ctx.skip();
      return "new";
    }),
    "old",
  );
  await log.reach("skip", 1);
  await cache.close();
  const after = await envelope(key);
  assert.is(after.id, before.id);
  const pttlAfter = Number(await db.redis.send(["PTTL", key]));
  assert.ok(pttlAfter <= pttlBefore, `PTTL ${pttlBefore} -> ${pttlAfter}`);
});

Context(
  "skip() releases and announces the lease at once: a waiter in another OS process loads for itself",
  async () => {
    const ns = db.ns();
    const redis = await db.client();
    const cache = pipeline<string>({ redis, ttlMs: 30_000, namespace: ns }, lease({ leaseMs: 30_000 }));
    const gate = deferred<void>();
    const mine = cache.get("k", async (ctx) => {
      await gate.promise;
      ctx.skip();
      return "from-a";
    });
    const watcher = await db.client({ resp: 2 });
    const worker = runWorkers(db.redis, new URL("./_skip_worker.ts", import.meta.url), ns, [[db.url, ns]]);
    // The other process waits on our lease; it polls only after 15-30 s, past its waitMs of 20 s.
    await watcher.send(["BLPOP", `${ns}:parked`, 30]);
    gate.resolve();
    assert.is(await mine, "from-a");
    const [out] = await worker;
    const b = JSON.parse(out!) as { value: string; stats: { loads: number; waits: number; timeouts: number } };
    assert.equal([b.value, b.stats.loads, b.stats.waits, b.stats.timeouts], ["from-b", 1, 1, 0]);
    assert.is(await cache.get("k", () => "unused"), "from-b");
    await cache.close();
  },
);

Context("getMany's loadMany context sets the TTL and tags of, or skips, each missing identity by index", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, lease());
  const errors: unknown[] = [];
  const values = await cache.getMany(["a", "b", "c"], (missing, ctx) => {
    ctx.setTtlMs(missing.indexOf("a"), 5_000);
    ctx.setTags(missing.indexOf("b"), ["t"]);
    ctx.skip(missing.indexOf("c"));
    try {
      ctx.skip(3);
    } catch (error) {
      errors.push(error);
    }
    return Promise.resolve(missing.map((id) => `${id}!`));
  });
  assert.equal(values, ["a!", "b!", "c!"]);
  assert.is((errors[0] as Error).message, "Cannot skip: 'index' must be an integer in 0..2, got 3");
  assert.instance(errors[0], RangeError);
  assert.ok((await envelope(cache.keys("a").data)).freshMs <= 5_000);
  assert.equal((await envelope(cache.keys("b").data)).tags, ["t"]);
  assert.is(await exists(cache.keys("c").data), 0);
  assert.is(cache.stats().skips, 1);
  await cache.close();
});

Context("warm() hands its loader the same context as get()", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() });
  const report = await cache.warm(["x", "y"], (ctx) => {
    if (ctx.identity === "y") ctx.skip();
    else ctx.setTtlMs(3_000);
    return String(ctx.identity);
  });
  assert.equal(report, { loaded: 2, fresh: 0, failed: 0 });
  assert.ok((await envelope(cache.keys("x").data)).freshMs <= 3_000);
  assert.is(await exists(cache.keys("y").data), 0);
  await cache.close();
});

Context.run();
