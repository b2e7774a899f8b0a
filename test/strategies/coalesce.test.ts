import { suite } from "uvu";
import * as assert from "uvu/assert";
import { TimeoutError } from "../../resp/errors.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { xfetch } from "../../strategies/xfetch.ts";
import type { Strategy } from "../../strategies/contract.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import { events, origin, plant } from "../support/strategies.ts";
import { deferred, tick, until } from "../support/wait.ts";

const Coalesce = suite("coalesce()");
const db = useRedis(Coalesce, { prefix: "coal" });

/**
 * Holds background refreshes until `gate` resolves, between coalesce() and
 * lease(): in the process stage by default, or beside lease() (`"redis"`),
 * still inside coalesce(), which then sees the refresh start.
 */
function holdBackground(gate: Promise<unknown>, stage?: "redis"): Strategy {
  return {
    name: "hold-background",
    ...(stage === undefined ? {} : { stage }),
    fill: (next) =>
      async function held(req) {
        if (req.background) await gate;
        return next({ ...req });
      },
  };
}

Coalesce("coalesce() shares one load among concurrent callers and counts the joiners", async () => {
  const ev = events();
  const strategy = coalesce();
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns(), onEvent: ev.onEvent }, strategy);
  const hold = deferred();
  const o = origin(() => ({ v: 1 }));
  o.hold = hold.promise;
  const calls = Array.from({ length: 20 }, () => cache.get("k", o.load));
  await ev.reach("coalesced", 19);
  assert.is(strategy.size, 1);
  hold.resolve();
  const values = await Promise.all(calls);
  assert.is(o.calls, 1);
  assert.ok(values.every((v) => v === values[0]), "every caller gets the one loaded value");
  assert.is(cache.stats().coalesced, 19);
  assert.is(strategy.size, 0);
  await cache.close();
});

Coalesce(
  "coalesce() lets each caller leave on its own signal or timeout; the load's signal fires when the last one leaves",
  async () => {
    const ev = events();
    const strategy = coalesce();
    const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns(), onEvent: ev.onEvent }, strategy);
    const hold = deferred();
    const o = origin(() => "late");
    o.hold = hold.promise;
    const first = new AbortController();
    const last = new AbortController();
    const p1 = cache.get("k", o.load, { signal: first.signal });
    // The load is running before the timed caller starts: on a slow machine its
    // 20 ms may run out during its own read, before it joins, and either way it
    // must leave alone without touching the load the others share.
    await until(() => o.calls === 1);
    const p3 = cache.get("k", o.load, { signal: last.signal });
    await ev.reach("coalesced", 1);
    const p2 = cache.get("k", o.load, { timeoutMs: 20 });
    p2.catch(() => {}); // it may reject while p1's rejection is awaited; asserted below
    first.abort(new Error("first left"));
    await rejects(() => p1, Error, "first left");
    await rejects(() => p2, TimeoutError, `The get of ${cache.keys("k").data} timed out: 'timeoutMs' of 20 ms ran out`);
    assert.is(o.signals[0]!.aborted, false, "two callers gone, one still waits");
    const reason = new Error("last left");
    last.abort(reason);
    await rejects(() => p3, Error, "last left");
    assert.is(o.signals[0]!.aborted, true);
    assert.is(o.signals[0]!.reason, reason);
    hold.resolve();
    await cache.close();
    assert.is(strategy.size, 0);
    assert.is(o.calls, 1);
  },
);

Coalesce(
  "a caller arriving after every caller of a flight left starts a new flight instead of inheriting their error",
  async () => {
    const ev = events();
    const strategy = coalesce();
    const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns(), onEvent: ev.onEvent }, strategy);
    const unwind = deferred();
    const second = deferred();
    let calls = 0;
    const load = async ({ signal }: { signal: AbortSignal }) => {
      const call = ++calls;
      if (call === 1) {
        // Obeys its signal, but unwinds slowly (as a lease release round trip does).
        await unwind.promise;
        throw signal.reason;
      }
      await second.promise;
      return `load ${call}`;
    };
    const a = cache.get("k", load, { timeoutMs: 50 });
    await ev.reach("load-start", 1);
    await rejects(() => a, TimeoutError, `The get of ${cache.keys("k").data} timed out: 'timeoutMs' of 50 ms ran out`);
    assert.is(strategy.size, 1, "the abandoned flight is still unwinding");
    // B has no deadline of its own: it must never receive A's TimeoutError.
    const b = cache.get("k", load).catch((e: unknown) => e);
    await ev.reach(["coalesced", "load-start"], 2);
    assert.is(calls, 2, "B joined the abandoned flight instead of starting its own");
    // The abandoned flight settles; its exit must not drop B's flight from the map.
    unwind.resolve();
    await ev.reach("load-end", 1);
    await tick(); // The rest of its unwinding is microtasks: done after one macrotask.
    assert.is(strategy.size, 1);
    const c = cache.get("k", load);
    await ev.reach(["coalesced", "load-start"], 3);
    assert.equal([calls, cache.stats().coalesced], [2, 1], "C joins B's flight");
    second.resolve();
    assert.equal(await Promise.all([b, c]), ["load 2", "load 2"]);
    assert.is(strategy.size, 0);
    await cache.close();
  },
);

Coalesce("coalesce() hands a failure to every joined caller, then forgets it", async () => {
  const ev = events();
  const strategy = coalesce();
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns(), onEvent: ev.onEvent }, strategy);
  const hold = deferred();
  const boom = new Error("origin down");
  const o = origin((call) => {
    if (call === 1) throw boom;
    return "recovered";
  });
  o.hold = hold.promise;
  const calls = Array.from(
    { length: 5 },
    () => cache.get("k", o.load).then(() => assert.unreachable("resolved"), (e) => e),
  );
  await ev.reach("coalesced", 4);
  hold.resolve();
  for (const error of await Promise.all(calls)) assert.is(error, boom);
  assert.is(strategy.size, 0);
  // The error is not served to the next caller: it loads again.
  assert.is(await cache.get("k", o.load), "recovered");
  assert.is(o.calls, 2);
  await cache.close();
});

// 20,000 keys, half of them failing, in batches of 5,000 at once: every way
// an entry leaves the map, thousands of times over, and exactly 0 left. Five
// times as many (17 s of a shared core) took no other path.
Coalesce("coalesce() leaves its map empty after 20,000 distinct keys, loaded or failed", async () => {
  const strategy = coalesce();
  // 5,000 gets at once on a busy 2-core machine: the test is about the map, not timeouts.
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns(), commandTimeoutMs: 60_000 }, strategy);
  let peak = 0;
  const boom = new Error("odd");
  for (let batch = 0; batch < 4; batch++) {
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 5000; i++) {
      const id = batch * 5000 + i;
      calls.push(
        cache.get(`k${id}`, () => {
          peak = Math.max(peak, strategy.size);
          if (id % 2) throw boom;
          return id;
        }).catch((e) => assert.is(e, boom, String(e))),
      );
    }
    await Promise.all(calls);
  }
  assert.ok(peak > 1, `loads overlapped (peak ${peak})`);
  assert.is(strategy.size, 0);
  const stats = cache.stats();
  assert.is(stats.loads, 20_000);
  assert.is(stats.loadErrors, 10_000);
  await db.redis.send(["FLUSHDB"]);
  await cache.close();
});

Coalesce("independent keys do not block each other", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, coalesce(), lease());
  const hold = deferred();
  const slow = origin(() => "slow");
  slow.hold = hold.promise;
  const held = cache.get("a", slow.load);
  await slow.called();
  assert.is(await cache.get("b", () => "quick"), "quick");
  assert.is(await cache.get(["b", 2], () => "quick too"), "quick too");
  hold.resolve();
  assert.is(await held, "slow");
  await cache.close();
});

Coalesce(
  "a caller who misses while a refresh ends without a value (skipped) goes through its own fill (here it waits on the other process' lease and times out), never taking none",
  async () => {
    const gate = deferred();
    const cache = pipeline(
      { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), random: () => 0.9 },
      xfetch(),
      coalesce(),
      holdBackground(gate.promise),
      lease({ waitMs: 100 }),
    );
    const keys = cache.keys("k");
    // Fresh but close to expiry with a slow last load: xfetch refreshes early.
    await plant(db.redis, cache, "k", { payload: '"current"', loadMs: 1000, freshMs: 2000 });
    assert.is(await cache.get("k", () => "unused"), "current");
    // Another process takes over refreshing, and the value expires meanwhile.
    await db.redis.send(["SET", keys.lease, "another-process", "PX", 5000]);
    await db.redis.send(["DEL", keys.data]);
    const o = origin(() => "never");
    const miss = cache.get("k", o.load).then((v) => ({ v }), (e: unknown) => ({ e }));
    gate.resolve();
    const result = await miss;
    assert.ok("e" in result && result.e instanceof TimeoutError, `the caller got ${JSON.stringify(result)}`);
    assert.is(o.calls, 0);
    await cache.close();
  },
);

Coalesce(
  "a caller who misses while a background refresh runs for its key takes the refresh's value: one origin call",
  async () => {
    const gate = deferred();
    // RESP2 and no near tier: nothing tells this cache of the DEL below, which stands for the entry expiring
    // unseen (a change it hears supersedes the refresh, whose value may predate the change).
    const redis = await db.client({ resp: 2 });
    const cache = pipeline(
      { redis, ttlMs: 60_000, namespace: db.ns(), random: () => 0.9 },
      xfetch(),
      coalesce(),
      // Before lease()'s own step: the refresh has no lease yet, so nothing in Redis would hold the caller back
      // (as when lease() steps aside: writes refused, Redis down).
      holdBackground(gate.promise, "redis"),
      lease({ waitMs: 100 }),
    );
    await plant(db.redis, cache, "k", { payload: '"current"', loadMs: 1000, freshMs: 2000 });
    const o = origin(() => "refreshed");
    // Fresh but close to expiry with a slow last load: xfetch starts a refresh, held.
    assert.is(await cache.get("k", o.load), "current");
    await db.redis.send(["DEL", cache.keys("k").data]);
    let settled = false;
    const miss = cache.get("k", o.load).finally(() => settled = true);
    // The caller has taken the refresh (counted then), not loaded beside it.
    await until(() => cache.stats().coalesced === 1);
    assert.is(o.calls, 0, "the caller loaded beside the refresh");
    assert.is(settled, false);
    gate.resolve();
    assert.is(await miss, "refreshed");
    assert.is(o.calls, 1);
    assert.is(cache.stats().coalesced, 1);
    await cache.close();
  },
);

Coalesce.run();
