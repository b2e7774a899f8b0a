import { suite } from "uvu";
import * as assert from "uvu/assert";
import { isOverloadedError, OverloadedError } from "../../strategies/errors.ts";
import { lease } from "../../strategies/lease.ts";
import { limit } from "../../strategies/limit.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { swr, type SwrOptions } from "../../strategies/swr.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import { origin, untilPastFresh } from "../support/strategies.ts";
import { deferred, until } from "../support/wait.ts";

const Limit = suite("limit()");
const db = useRedis(Limit, { prefix: "lim" });

Limit("limit() rejects bad settings with messages naming them", async () => {
  await rejects(
    () => limit(undefined as never),
    RangeError,
    "Cannot create limit: 'concurrency' must be a positive integer, got undefined",
  );
  await rejects(
    () => limit({ concurrency: 0 }),
    RangeError,
    "Cannot create limit: 'concurrency' must be a positive integer, got 0",
  );
  await rejects(
    () => limit({ concurrency: 1, queueMs: -1 }),
    RangeError,
    "Cannot create limit: 'queueMs' must be a non-negative integer, got -1",
  );
  const s = limit({ concurrency: 3 });
  assert.equal([s.concurrency, s.queueMs, s.active, s.queued], [3, 0, 0, 0]);
});

Limit(
  "limit() sheds a load beyond the concurrency with OverloadedError and never calls the origin for it",
  async () => {
    const strategy = limit({ concurrency: 2 });
    const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, lease(), strategy);
    const hold = deferred();
    const held = origin(() => "v");
    held.hold = hold.promise;
    const a = cache.get("a", held.load);
    const b = cache.get("b", held.load);
    await until(() => held.calls === 2);
    assert.is(strategy.active, 2);
    const shed = origin(() => "never");
    const error = await rejects(
      () => cache.get("c", shed.load),
      OverloadedError,
      `Cannot load ${cache.keys("c").data}: 2 loads in flight and no slot freed within queueMs (0 ms)`,
    );
    assert.ok(isOverloadedError(error));
    assert.equal([(error as OverloadedError).concurrency, (error as OverloadedError).queuedMs], [2, 0]);
    assert.is(shed.calls, 0);
    assert.is(cache.stats().shed, 1);
    assert.is(await db.redis.send(["EXISTS", cache.keys("c").lease]), 0, "the shed call's lease was released");
    hold.resolve();
    assert.equal(await Promise.all([a, b]), ["v", "v"]);
    assert.is(strategy.active, 0);
    assert.is(await cache.get("c", shed.load), "never", "a free slot admits the next load");
    await cache.close();
  },
);

Limit("a queued load starts when a slot frees within queueMs, in arrival order", async () => {
  const strategy = limit({ concurrency: 1, queueMs: 10_000 });
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, strategy);
  const hold = deferred();
  const order: string[] = [];
  const first = cache.get("a", async () => {
    await hold.promise;
    order.push("a");
    return "a";
  });
  await until(() => strategy.active === 1);
  // Each joins the queue before the next starts: arrival order is the call
  // order, whatever the reads before the queue cost each of them.
  const second = cache.get("b", () => (order.push("b"), "b"));
  await until(() => strategy.queued === 1);
  const third = cache.get("c", () => (order.push("c"), "c"));
  await until(() => strategy.queued === 2);
  hold.resolve();
  assert.equal(await Promise.all([first, second, third]), ["a", "b", "c"]);
  assert.equal(order, ["a", "b", "c"]);
  assert.equal([strategy.active, strategy.queued, cache.stats().shed], [0, 0, 0]);
  await cache.close();
});

Limit("a load still queued after queueMs is shed, and a queued caller who leaves frees its place", async () => {
  const strategy = limit({ concurrency: 1, queueMs: 50 });
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, strategy);
  const hold = deferred();
  const first = cache.get("a", () => hold.promise.then(() => "a"));
  await until(() => strategy.active === 1);
  const error = await rejects(
    () => cache.get("b", () => "b"),
    OverloadedError,
    `Cannot load ${cache.keys("b").data}: 1 loads in flight and no slot freed within queueMs (50 ms)`,
  );
  // Node's timers run on a millisecond loop clock that may fire a timer up to about 2 ms short of real time.
  assert.ok((error as OverloadedError).queuedMs >= 48, `queuedMs ${(error as OverloadedError).queuedMs}`);
  const controller = new AbortController();
  const leaving = cache.get("c", () => "c", { signal: controller.signal });
  await until(() => strategy.queued === 1);
  controller.abort(new Error("left the queue"));
  await rejects(() => leaving, Error, "left the queue");
  await until(() => strategy.queued === 0);
  hold.resolve();
  assert.is(await first, "a");
  assert.is(cache.stats().shed, 1);
  await cache.close();
});

/**
 * A cache under limit({ concurrency: 1 }) whose "x" is past its fresh window
 * (swr's `windows` left to serve it) and whose one slot a held load of "y"
 * takes: the next load is shed. `release()` lets "y" finish.
 */
async function slotTakenWithXStale(windows: SwrOptions) {
  const strategy = limit({ concurrency: 1 });
  const cache = pipeline({ redis: db.redis, ttlMs: 100, namespace: db.ns() }, swr(windows), lease(), strategy);
  await cache.get("x", () => "old x");
  await untilPastFresh(db.redis, cache, "x", 10_000);
  const hold = deferred();
  const busy = cache.get("y", () => hold.promise.then(() => "y"));
  await until(() => strategy.active === 1);
  return { cache, busy, release: () => hold.resolve() };
}

Limit("a shed call gets the stale value when swr holds one", async () => {
  const { cache, busy, release } = await slotTakenWithXStale({ staleMs: 0, ifErrorMs: 10_000 });
  const o = origin(() => "new x");
  assert.is(await cache.get("x", o.load), "old x");
  assert.is(o.calls, 0);
  assert.equal([cache.stats().shed, cache.stats().stale], [1, 1]);
  release();
  assert.is(await busy, "y");
  await cache.close();
});

Limit("a background refresh that is shed is counted and leaves the stale value in place", async () => {
  const { cache, busy, release } = await slotTakenWithXStale({ staleMs: 10_000 });
  assert.is(await cache.get("x", () => "new x"), "old x");
  await until(() => cache.stats().refreshErrors === 1);
  assert.is(cache.stats().shed, 1);
  release();
  await busy;
  await cache.close();
});

Limit.run();
