import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { RedisClient } from "../../resp/client.ts";
import { TimeoutError } from "../../resp/errors.ts";
import { writePublication as publish } from "../../strategies/pipeline/fill/publish_script.ts";
import { releaseLease, renewLease } from "../../strategies/_lease_scripts.ts";
import type { Strategy } from "../../strategies/contract.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { rejects } from "../support/assert.ts";
import { client, useRedis } from "../support/fixture.ts";
import { events, origin } from "../support/strategies.ts";
import { deferred, until } from "../support/wait.ts";

const Lease = suite("lease()");
const db = useRedis(Lease, { prefix: "lease", clients: 2 });

// Runs alone: a waiter's 30 ms timeoutMs must run out while it waits, not before it gets there;
// a CPU-bound file in the other worker once delayed that way past 30 ms on 2 shared cores.

Lease("lease() rejects bad options with messages naming the setting", async () => {
  await rejects(
    () => lease({ leaseMs: 0 }),
    RangeError,
    "Cannot create lease: 'leaseMs' must be a positive integer, got 0",
  );
  await rejects(
    () => lease({ leaseMs: 1.5 }),
    RangeError,
    "Cannot create lease: 'leaseMs' must be a positive integer, got 1.5",
  );
  await rejects(
    () => lease({ waitMs: -1 }),
    RangeError,
    "Cannot create lease: 'waitMs' must be a positive integer, got -1",
  );
  await rejects(
    () => lease({ renew: "yes" as never }),
    TypeError,
    `Cannot create lease: 'renew' must be a boolean, got "yes"`,
  );
  await rejects(
    () => lease({ pollMs: 0 }),
    RangeError,
    "Cannot create lease: 'pollMs' must be a positive integer, got 0",
  );
  await rejects(
    () => lease({ pollMs: 2.5 }),
    RangeError,
    "Cannot create lease: 'pollMs' must be a positive integer, got 2.5",
  );
  await rejects(
    () => lease({ renew: true, maxHoldMs: 0 }),
    RangeError,
    "Cannot create lease: 'maxHoldMs' must be a positive integer, got 0",
  );
  await rejects(
    () => lease({ leaseMs: 150, renew: true, maxHoldMs: 149 }),
    RangeError,
    "Cannot create lease: 'maxHoldMs' (149) must be at least 'leaseMs' (150)",
  );
  await rejects(
    () => lease({ maxHoldMs: 60_000 }),
    TypeError,
    "Cannot create lease: 'maxHoldMs' bounds renewal and needs 'renew: true' (without it a lease lasts leaseMs)",
  );
  assert.is(lease().maxHoldMs, 15_000);
  assert.is(lease({ leaseMs: 200, renew: true }).maxHoldMs, 2_000);
  assert.is(lease({ leaseMs: 200, renew: true, maxHoldMs: 200 }).maxHoldMs, 200);
  await rejects(() => lease(5 as never), TypeError, "Cannot create lease: options must be an object, got number");
  const s = lease();
  assert.equal([s.name, s.leaseMs, s.waitMs, s.renew, s.pollMs], ["lease", 1500, 2000, false, undefined]);
  assert.is(lease({ pollMs: 60_000 }).pollMs, 60_000);
});

async function burst(a: RedisClient, b: RedisClient): Promise<void> {
  const namespace = db.ns();
  const ev = events();
  const one = pipeline({ redis: a, ttlMs: 5000, namespace, onEvent: ev.onEvent }, coalesce(), lease());
  const two = pipeline({ redis: b, ttlMs: 5000, namespace, onEvent: ev.onEvent }, coalesce(), lease());
  const hold = deferred();
  const o = origin(() => ({ value: "v" }));
  o.hold = hold.promise;
  const calls = Array.from({ length: 50 }, (_, i) => (i % 2 ? one : two).get("hot", o.load));
  // Hold the origin until the other 49 callers are parked: joined in-process
  // (coalesced) or waiting on the other client's lease.
  await ev.reach(["coalesced", "wait"], 49);
  hold.resolve();
  const values = await Promise.all(calls);
  assert.is(o.calls, 1);
  assert.ok(values.every((v) => (v as { value: string }).value === "v"));
  assert.is(one.stats().loads + two.stats().loads, 1);
  assert.is(one.stats().coalesced + two.stats().coalesced, 48);
  await Promise.all([one.close(), two.close()]);
}

for (const [resp, how] of [[3, "push wake-ups"], [2, "polling"]] as const) {
  Lease(`a cold burst of 50 gets through 2 RESP${resp} clients (${how}) costs 1 origin call`, async () => {
    const a = await client(db.url, resp);
    const b = await client(db.url, resp);
    try {
      await burst(a, b);
    } finally {
      a.destroy();
      b.destroy();
    }
  });
}

Lease("RESP3 waiters are woken through client tracking: the command connection is never subscribed", async () => {
  const namespace = db.ns();
  const ev = events();
  const own = await client(db.server.url);
  await own.send(["CLIENT", "SETNAME", "tracked-only"]);
  const a = pipeline({ redis: own, ttlMs: 5000, namespace, onEvent: ev.onEvent }, lease());
  const b = pipeline({ redis: own, ttlMs: 5000, namespace, onEvent: ev.onEvent }, lease());
  const hold = deferred();
  const o = origin(() => "v");
  o.hold = hold.promise;
  const calls = [a.get("k", o.load), b.get("k", o.load)];
  await ev.reach("wait", 1);
  const line = String(await db.redis.send(["CLIENT", "LIST"])).split("\n").find((l) =>
    l.includes("name=tracked-only")
  )!;
  // Flag t (tracking), never P (pub/sub): Redis' pub/sub output-buffer limits never apply to it.
  assert.match(line, /flags=t\b/);
  assert.match(line, /\bsub=0\b/);
  assert.is((await db.redis.send(["PUBSUB", "NUMSUB", `${namespace}:published`]) as unknown[])[1], 0);
  hold.resolve();
  assert.equal(await Promise.all(calls), ["v", "v"]);
  await Promise.all([a.close(), b.close()]);
  own.destroy();
});

Lease("a given wakeups client is subscribed once and the last cache to close unsubscribes", async () => {
  const namespace = db.ns();
  const channel = `${namespace}:published`;
  const numsub = async () => (await db.redis.send(["PUBSUB", "NUMSUB", channel]) as unknown[])[1];
  const ev = events();
  const listener = await client(db.server.url);
  const a = pipeline({ redis: db.redis, ttlMs: 5000, namespace, onEvent: ev.onEvent, wakeups: listener }, lease());
  const b = pipeline({ redis: db.redis, ttlMs: 5000, namespace, onEvent: ev.onEvent, wakeups: listener }, lease());
  const polled = pipeline({ redis: db.other, ttlMs: 5000, namespace, wakeups: "poll" }, lease());
  const hold = deferred();
  const o = origin(() => "v");
  o.hold = hold.promise;
  const calls = [a.get("k", o.load), b.get("k", o.load), polled.get("k", o.load)];
  await ev.reach("wait", 1);
  assert.is(await numsub(), 1);
  hold.resolve();
  assert.equal(await Promise.all(calls), ["v", "v", "v"]);
  await a.close();
  assert.is(await numsub(), 1, "b still listens");
  await b.close();
  await polled.close();
  assert.is(await numsub(), 0);
  listener.destroy();
});

Lease("a waiter on a RESP3 client is woken by the publication's push, not by polling", async () => {
  const namespace = db.ns();
  const ev = events();
  const a = pipeline({ redis: db.other, ttlMs: 5000, namespace }, lease());
  // Its first look again would come after 30 s at the earliest, past its
  // 4 s deadline: only a push wake-up can end this wait in time.
  const b = pipeline(
    { redis: db.redis, ttlMs: 5000, namespace, onEvent: ev.onEvent },
    lease({ pollMs: 60_000, waitMs: 5_000 }),
  );
  const hold = deferred();
  const owner = origin(() => "published");
  owner.hold = hold.promise;
  const first = a.get("k", owner.load);
  await owner.called();
  const o = origin(() => "never");
  const waiter = b.get("k", o.load, { timeoutMs: 4_000 });
  await ev.reach("wait", 1);
  hold.resolve();
  assert.is(await waiter, "published");
  assert.is(await first, "published");
  assert.equal([o.calls, b.stats().waits, b.stats().timeouts], [0, 1, 0]);
  await Promise.all([a.close(), b.close()]);
});

Lease("a fill that lands between the first read and the lease is used, never loaded twice", async () => {
  const namespace = db.ns();
  const theirs = pipeline({ redis: db.other, ttlMs: 5000, namespace }, lease());
  // Runs after this cache's read missed and before its lease attempt.
  const interpose: Strategy = {
    name: "interpose",
    fill: (next) =>
      async function interposed(req) {
        await theirs.get("k", () => "theirs");
        return next(req);
      },
  };
  const mine = pipeline({ redis: db.redis, ttlMs: 5000, namespace }, interpose, lease());
  const o = origin(() => "mine");
  assert.is(await mine.get("k", o.load), "theirs");
  assert.is(o.calls, 0);
  const stats = mine.stats();
  assert.equal([stats.misses, stats.leasesWon, stats.loads], [1, 1, 0]);
  assert.is(await db.redis.send(["EXISTS", mine.keys("k").lease]), 0, "the lease taken for nothing was released");
  await Promise.all([mine.close(), theirs.close()]);
});

Lease("an origin failure reaches the owner's callers and a waiter takes over at once", async () => {
  const namespace = db.ns();
  const ev = events();
  // A lease far longer than the wait: only an immediate release lets a waiter in.
  const a = pipeline(
    { redis: db.redis, ttlMs: 5000, namespace, onEvent: ev.onEvent },
    coalesce(),
    lease({ leaseMs: 30_000, waitMs: 2_000 }),
  );
  const b = pipeline(
    { redis: db.other, ttlMs: 5000, namespace, onEvent: ev.onEvent },
    coalesce(),
    lease({ leaseMs: 30_000, waitMs: 2_000 }),
  );
  const hold = deferred();
  const boom = new Error("origin down");
  const o = origin((call) => {
    if (call === 1) throw boom;
    return "second try";
  });
  o.hold = hold.promise;
  const fromA = Array.from({ length: 5 }, () => a.get("k", o.load).catch((e: unknown) => e));
  await o.called();
  const fromB = Array.from({ length: 5 }, () => b.get("k", o.load));
  await ev.reach(["coalesced", "wait"], 9);
  hold.resolve();
  for (const error of await Promise.all(fromA)) assert.is(error, boom);
  assert.equal(await Promise.all(fromB), Array(5).fill("second try"));
  assert.is(o.calls, 2);
  assert.equal([a.stats().loadErrors, b.stats().leasesWon, b.stats().loads], [1, 1, 1]);
  await Promise.all([a.close(), b.close()]);
});

Lease("an owner whose caller leaves keeps loading and publishes for the waiters", async () => {
  const namespace = db.ns();
  const ev = events();
  const a = pipeline({ redis: db.redis, ttlMs: 5000, namespace, onEvent: ev.onEvent }, lease());
  const b = pipeline({ redis: db.other, ttlMs: 5000, namespace, onEvent: ev.onEvent }, lease());
  const hold = deferred();
  const o = origin(() => "published anyway");
  o.hold = hold.promise;
  const controller = new AbortController();
  const owner = a.get("k", o.load, { signal: controller.signal });
  await o.called();
  const waiter = b.get("k", o.load);
  await ev.reach("wait", 1);
  controller.abort(new Error("owner's caller left"));
  await rejects(() => owner, Error, "owner's caller left");
  assert.is(o.signals[0]!.aborted, true, "the loader is told nobody here waits");
  hold.resolve();
  assert.is(await waiter, "published anyway");
  await a.close();
  assert.is(await b.get("k", o.load), "published anyway", "a hit: it was stored");
  assert.is(o.calls, 1);
  await b.close();
});

Lease(
  "an owner whose loader obeys its signal releases the lease, and a waiter takes over within its deadline",
  async () => {
    const namespace = db.ns();
    const ev = events();
    // A lease far longer than the wait: only an immediate release lets the waiter in.
    const a = pipeline({ redis: db.redis, ttlMs: 5000, namespace }, lease({ leaseMs: 30_000, waitMs: 2_000 }));
    const b = pipeline(
      { redis: db.other, ttlMs: 5000, namespace, onEvent: ev.onEvent },
      lease({ leaseMs: 30_000, waitMs: 2_000 }),
    );
    const o = origin(() => "from the waiter");
    const controller = new AbortController();
    const obeying = ({ signal }: { signal: AbortSignal }) =>
      new Promise<string>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
    const owner = a.get("k", obeying, { signal: controller.signal });
    await until(async () => (await db.redis.send(["EXISTS", a.keys("k").lease])) === 1);
    const waiter = b.get("k", o.load);
    await ev.reach("wait", 1);
    controller.abort(new Error("owner's caller left"));
    await rejects(() => owner, Error, "owner's caller left");
    assert.is(await waiter, "from the waiter");
    assert.equal([o.calls, b.stats().leasesWon, a.stats().loadErrors], [1, 1, 1]);
    await Promise.all([a.close(), b.close()]);
  },
);

Lease("a waiter whose caller leaves stops waiting at once and never calls the origin", async () => {
  const namespace = db.ns();
  const ev = events();
  const a = pipeline({ redis: db.redis, ttlMs: 5000, namespace }, lease());
  const b = pipeline({ redis: db.other, ttlMs: 5000, namespace, onEvent: ev.onEvent }, lease());
  const hold = deferred();
  const o = origin(() => "v");
  o.hold = hold.promise;
  const owner = a.get("k", o.load);
  await o.called();
  const controller = new AbortController();
  const waiter = b.get("k", o.load, { signal: controller.signal });
  await ev.reach("wait", 1);
  controller.abort(new Error("waiter left"));
  await rejects(() => waiter, Error, "waiter left");
  hold.resolve();
  assert.is(await owner, "v");
  assert.is(o.calls, 1);
  await Promise.all([a.close(), b.close()]);
});

Lease("a waiter runs out of waitMs (or its own timeout) with TimeoutError and zero origin calls", async () => {
  const namespace = db.ns();
  const a = pipeline({ redis: db.redis, ttlMs: 5000, namespace }, lease());
  const b = pipeline({ redis: db.other, ttlMs: 5000, namespace }, lease({ waitMs: 100 }));
  const hold = deferred();
  const owner = origin(() => "v");
  owner.hold = hold.promise;
  const first = a.get("k", owner.load);
  await owner.called();
  const o = origin(() => "never");
  const key = b.keys("k").data;
  const error = await rejects(
    () => b.get("k", o.load),
    TimeoutError,
    `Waiting for another caller's load of ${key} timed out: 'waitMs' of 100 ms ran out`,
  );
  assert.ok((error as TimeoutError).waitedMs >= 100);
  await rejects(
    () => b.get("k", o.load, { timeoutMs: 30 }),
    TimeoutError,
    `The get of ${key} timed out: 'timeoutMs' of 30 ms ran out`,
  );
  assert.is(o.calls, 0);
  assert.equal([b.stats().timeouts, b.stats().waits, b.stats().loads], [2, 2, 0]);
  hold.resolve();
  assert.is(await first, "v");
  await Promise.all([a.close(), b.close()]);
});

Lease("a real lease expiry lets a second owner in, and the first owner's late publish is rejected", async () => {
  const namespace = db.ns();
  const a = pipeline({ redis: db.redis, ttlMs: 5000, namespace }, lease({ leaseMs: 150 }));
  const b = pipeline({ redis: db.other, ttlMs: 5000, namespace }, lease({ leaseMs: 1000 }));
  const hold = deferred();
  const slow = origin(() => "older");
  slow.hold = hold.promise;
  const first = a.get("k", slow.load);
  await slow.called();
  const keys = a.keys("k");
  // Redis drops the lease by itself while the first owner is still loading.
  await until(async () => (await db.redis.send(["EXISTS", keys.lease])) === 0);
  assert.is(await b.get("k", () => "newer"), "newer");
  hold.resolve();
  assert.is(await first, "newer", "the late owner returns the value stored now");
  assert.is(a.stats().lateRejected, 1);
  assert.match(String(await db.redis.send(["GET", keys.data])), /"newer"$/);
  await Promise.all([a.close(), b.close()]);
});

Lease("an owner that crashed holding the lease delays waiters only until the lease expires", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 5000, namespace: db.ns() }, lease());
  const keys = cache.keys("k");
  await db.redis.send(["SET", keys.lease, "a-crashed-process", "PX", 150]);
  const o = origin(() => "recovered");
  assert.is(await cache.get("k", o.load), "recovered");
  assert.is(o.calls, 1);
  assert.equal([cache.stats().waits, cache.stats().leasesWon], [1, 1]);
  await cache.close();
});

const ENVELOPE = "hl3;v;0000000000000;5000;0;0;0;id;epoch;json;;;1";

Lease("a wrong token can neither publish, renew nor release", async () => {
  const keys = { data: "scripts:{t}:data", lease: "scripts:{t}:lease" };
  await db.redis.send(["SET", keys.lease, "right", "PX", 10_000]);
  assert.is(
    await publish(db.redis, {
      key: keys.data,
      lease: keys.lease,
      mode: "guarded",
      token: "wrong",
      envelope: ENVELOPE,
      px: 5000,
      channel: "ch",
    }),
    false,
  );
  assert.is(await db.redis.send(["EXISTS", keys.data]), 0);
  assert.is(await renewLease(db.redis, { keys, token: "wrong", leaseMs: 60_000 }), false);
  assert.ok(Number(await db.redis.send(["PTTL", keys.lease])) <= 10_000);
  assert.is(await releaseLease(db.redis, { keys, token: "wrong", channel: "ch" }), false);
  assert.is(await db.redis.send(["GET", keys.lease]), "right");
  // The right token can do all three.
  assert.is(await renewLease(db.redis, { keys, token: "right", leaseMs: 60_000 }), true);
  assert.ok(Number(await db.redis.send(["PTTL", keys.lease])) > 10_000);
  assert.is(
    await publish(db.redis, {
      key: keys.data,
      lease: keys.lease,
      mode: "guarded",
      token: "right",
      envelope: ENVELOPE,
      px: 5000,
      channel: "ch",
    }),
    true,
  );
  const stored = String(await db.redis.send(["GET", keys.data]));
  assert.ok(
    /^hl3;v;\d{13};/.test(stored) && !stored.startsWith("hl3;v;0000000000000"),
    "stamped with the server's TIME",
  );
  assert.is(await db.redis.send(["EXISTS", keys.lease]), 0, "publication drops the lease");
  await db.redis.send(["SET", keys.lease, "right", "PX", 10_000]);
  assert.is(await releaseLease(db.redis, { keys, token: "right", channel: "ch" }), true);
  assert.is(await db.redis.send(["EXISTS", keys.lease]), 0);
});

Lease("renew: true keeps a long load's lease alive until it publishes", async () => {
  const cache = pipeline(
    { redis: db.redis, ttlMs: 5000, namespace: db.ns() },
    lease({ leaseMs: 100, renew: true, maxHoldMs: 60_000 }),
  );
  const keys = cache.keys("k");
  const hold = deferred();
  const o = origin(() => "long load");
  o.hold = hold.promise;
  const call = cache.get("k", o.load);
  await o.called();
  // Watch the lease's TTL climb back up six times: it outlives its 100 ms.
  let renewals = 0;
  let last = Infinity;
  await until(async () => {
    const pttl = Number(await db.other.send(["PTTL", keys.lease]));
    assert.ok(pttl > 0, "the lease expired while renewing");
    if (pttl > last) renewals++;
    last = pttl;
    return renewals >= 6;
  });
  hold.resolve();
  assert.is(await call, "long load");
  assert.is(cache.stats().lateRejected, 0);
  assert.match(String(await db.redis.send(["GET", keys.data])), /"long load"$/);
  await cache.close();
});

Lease(
  "a held loader keeps a renewed lease no longer than maxHoldMs: another client takes over, the held load's late publication is rejected",
  async () => {
    const namespace = db.ns();
    const owner = pipeline(
      { redis: db.redis, ttlMs: 5000, namespace },
      lease({ leaseMs: 100, renew: true, maxHoldMs: 300 }),
    );
    const other = pipeline({ redis: db.other, ttlMs: 5000, namespace }, lease({ leaseMs: 100, waitMs: 20_000 }));
    const hold = deferred();
    const o = origin(() => "held load");
    o.hold = hold.promise;
    const held = owner.get("k", o.load);
    await o.called();
    // Only the lease lapsing lets the other client in: the held load is still running.
    assert.is(await other.get("k", () => "taken over"), "taken over");
    assert.is(o.calls, 1);
    hold.resolve();
    assert.is(await held, "taken over", "the held owner returns what is stored now");
    assert.is(owner.stats().lateRejected, 1);
    assert.match(String(await db.redis.send(["GET", owner.keys("k").data])), /"taken over"$/);
    await owner.close();
    await other.close();
  },
);

Lease("invalidate() during a load drops data and lease, so the old snapshot is never published", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 5000, namespace: db.ns() }, lease());
  const keys = cache.keys("k");
  assert.is(await cache.get("k", () => "v1"), "v1");
  await cache.invalidate("k");
  assert.is(await db.redis.send(["EXISTS", keys.data]), 0);
  const hold = deferred();
  const o = origin(() => "old snapshot");
  o.hold = hold.promise;
  const call = cache.get("k", o.load);
  await o.called();
  await cache.invalidate("k");
  hold.resolve();
  assert.is(await call, "old snapshot", "its own value, since nothing newer is stored");
  assert.is(cache.stats().lateRejected, 1);
  assert.is(await db.redis.send(["EXISTS", keys.data, keys.lease]), 0);
  assert.is(await cache.get("k", () => "after"), "after");
  await cache.close();
});

Lease.run();
