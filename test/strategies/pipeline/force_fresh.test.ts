/**
 * `get(..., { forceFresh: true })`: no near or stored entry is served; the
 * load is shared with the other forceFresh calls of the identity only, runs
 * under the lease without the re-check after winning it, and a caller
 * waiting on another process' lease takes only a value whose load began
 * after its call. What it publishes is what the next plain get reads.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { randomUUID } from "node:crypto";
import { coalesce } from "../../../strategies/coalesce.ts";
import { lease } from "../../../strategies/lease.ts";
import { near } from "../../../strategies/near.ts";
import { decodeEnvelope } from "../../../strategies/pipeline/read/envelope.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import { rejects } from "../../support/assert.ts";
import { useRedis } from "../../support/fixture.ts";
import { events, origin, untilServerMoved } from "../../support/strategies.ts";
import { deferred, until } from "../../support/wait.ts";

const Force = suite("get(..., { forceFresh: true })");
const db = useRedis(Force, { prefix: "force", clients: 2 });

const payload = async (key: string) => decodeEnvelope(String(await db.redis.send(["GET", key]))).payload;

Force("serves no near or stored entry; what it publishes is what every process' next get reads", async () => {
  const namespace = db.ns();
  const evB = events();
  const one = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace }, near(), coalesce(), lease());
  const two = pipeline<string>(
    { redis: db.other, ttlMs: 60_000, namespace, onEvent: evB.onEvent },
    near(),
    coalesce(),
    lease(),
  );
  await one.set("k", "v1");
  assert.is(await one.get("k", () => "never"), "v1");
  await until(async () => (await two.getEntry("k", () => "never")).source === "near");
  assert.equal((await one.getEntry("k", () => "never")).source, "near");
  // A fresh entry is in both near tiers and in Redis: forceFresh loads anyway,
  // under the lease, without taking the entry its lease read found.
  const r = await one.getEntry("k", () => "v2", { forceFresh: true });
  assert.equal([r.value, r.source, r.stored], ["v2", "origin", true]);
  assert.is(await payload(one.keys("k").data), '"v2"');
  assert.is(await one.get("k", () => "never"), "v2");
  await evB.reach("near-invalidation", 1);
  assert.is(await two.get("k", () => "never"), "v2");
  assert.equal([one.stats().loads, two.stats().loads], [1, 0]);
  await one.close();
  await two.close();
});

Force("forceFresh calls share one load; a plain get's load is never theirs", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
  const plain = origin((n) => `plain-${n}`);
  const releasePlain = deferred();
  plain.hold = releasePlain.promise;
  const first = cache.get("k", plain.load);
  await plain.called(1);
  // Two forceFresh calls while the plain load (begun before them) runs.
  const forced = origin((n) => `forced-${n}`);
  const f1 = cache.get("k", forced.load, { forceFresh: true });
  const f2 = cache.get("k", forced.load, { forceFresh: true });
  releasePlain.resolve();
  assert.is(await first, "plain-1");
  assert.equal(await Promise.all([f1, f2]), ["forced-1", "forced-1"]);
  assert.equal([plain.calls, forced.calls, cache.stats().coalesced], [1, 1, 1]);
  assert.is(await cache.get("k", () => "never"), "forced-1");
  await cache.close();
});

for (const resp of [3, 2] as const) {
  Force(
    `waiting on another process' lease, it refuses a value whose load began before its call (RESP${resp})`,
    async () => {
      const namespace = db.ns();
      const a = resp === 3 ? db.redis : await db.client({ resp: 2 });
      const b = resp === 3 ? db.other : await db.client({ resp: 2 });
      const evB = events();
      const one = pipeline<string>({ redis: a, ttlMs: 60_000, namespace }, lease());
      const two = pipeline<string>(
        { redis: b, ttlMs: 60_000, namespace, onEvent: evB.onEvent },
        lease({ waitMs: 10_000 }),
      );
      const held = deferred();
      const called = deferred();
      const plain = one.get("k", async () => {
        called.resolve();
        await held.promise;
        return "begun-before";
      });
      await called.promise;
      const forced = two.getEntry("k", () => "from-b", { forceFresh: true });
      await evB.reach("wait", 1);
      held.resolve();
      assert.is(await plain, "begun-before");
      const r = await forced;
      assert.equal([r.value, r.source, r.stored], ["from-b", "origin", true]);
      assert.equal([two.stats().loads, two.stats().waits], [1, 1]);
      await one.close();
      await two.close();
    },
  );
}

Force("waiting on another lease, it takes a value whose load began after its call", async () => {
  const namespace = db.ns();
  const evB = events();
  const one = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace }, lease());
  const two = pipeline<string>(
    { redis: db.other, ttlMs: 60_000, namespace, onEvent: evB.onEvent },
    lease({
      waitMs: 10_000,
    }),
  );
  // Another owner holds the lease (it never publishes).
  await db.redis.send(["SET", one.keys("k").lease, randomUUID(), "PX", 60_000]);
  let loaded = false;
  const forced = two.getEntry("k", () => {
    loaded = true;
    return "from-b";
  }, { forceFresh: true });
  await evB.reach("wait", 1);
  // A write made surely after the call began, whatever either client's
  // estimate of the server's clock: once the server's own clock moved on by
  // far more than those estimates' errors. set() drops the lease and wakes the waiter.
  await untilServerMoved(db.redis, 200);
  await one.set("k", "written-after");
  const r = await forced;
  assert.equal([r.value, r.source, loaded], ["written-after", "redis", false]);
  await one.close();
  await two.close();
});

Force("getMany loads every identity, stored or not; getEntry reports the load", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
  await cache.set("a", "a1");
  const batches: string[][] = [];
  const values = await cache.getMany(["a", "b", "a"], (missing) => {
    batches.push(missing.map(String));
    return Promise.resolve(missing.map((id) => `${String(id)}2`));
  }, { forceFresh: true });
  assert.equal(values, ["a2", "b2", "a2"]);
  assert.equal(batches, [["a", "b"]]);
  assert.equal(await cache.getMany(["a", "b"], () => Promise.reject(new Error("never"))), ["a2", "b2"]);
  const r = await cache.getEntry("a", () => "a3", { forceFresh: true });
  assert.equal([r.value, r.source, r.stored, r.notModified], ["a3", "origin", true, false]);
  await cache.close();
});

Force("without lease() or coalesce(), it loads and publishes; a bad value is refused naming the option", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() });
  await cache.set("k", "v1");
  let previous: unknown = "unset";
  assert.is(
    await cache.get("k", (ctx) => {
      previous = ctx.previous;
      return "v2";
    }, { forceFresh: true }),
    "v2",
  );
  assert.is(previous, undefined, "nothing was read, so nothing is previous");
  assert.is(await cache.get("k", () => "never"), "v2");
  await rejects(
    () => cache.get("k", () => "v", { forceFresh: "yes" as never }),
    TypeError,
    `Cannot get: 'forceFresh' must be a boolean, got "yes"`,
  );
  await rejects(
    () => cache.get("k", () => "v", { forcefresh: true } as never),
    TypeError,
    /Unknown option 'forcefresh' for get\(\); did you mean 'forceFresh'\?/,
  );
  await cache.close();
});

Force("under lease(), the entry its lease read is the load's previous", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, lease());
  await cache.get("k", (ctx) => {
    ctx.setEtag("e1");
    return "v1";
  });
  const r = await cache.getEntry("k", (ctx) => {
    assert.equal([ctx.previous?.value, ctx.previous?.etag], ["v1", "e1"]);
    return ctx.notModified();
  }, { forceFresh: true });
  assert.equal([r.value, r.notModified, r.stored], ["v1", true, true]);
  await cache.close();
});

Force.run();
