/**
 * Values going backwards after an eviction storm: every
 * path by which an older version could be stored or served after a newer
 * one was, forced one at a time against a real redis-server. Versions come
 * from an origin counter (`v1` is older than `v2`); two caches on two
 * connections stand for two processes; a held origin call is a load in
 * flight; `CONFIG SET maxmemory` refuses writes with OOM, and a `DEL` of a
 * lease, tag or epoch key stands for Redis evicting it.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { RedisClient } from "../../resp/client.ts";
import type { Arg, SendOptions } from "../../resp/types.ts";
import { RedisReplyError } from "../../resp/errors.ts";
import { epochKeyOf, tagKeyPrefix } from "../../strategies/pipeline/coherence/version_keys.ts";
import { lease } from "../../strategies/lease.ts";
import { near } from "../../strategies/near.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { swr } from "../../strategies/swr.ts";
import type { Strategy } from "../../strategies/contract.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import { events, untilServerMoved } from "../support/strategies.ts";
import { startProxy } from "../support/proxy.ts";
import { deferred } from "../support/wait.ts";

const test = suite<{ redis: RedisClient; other: RedisClient; admin: RedisClient }>("eviction storm: value order");
const db = useRedis(test, { clients: 2, server: { args: ["--maxmemory-policy", "noeviction"] } });
test.before(async (ctx) => {
  ctx.admin = await db.client({});
});
test.after.each(async ({ admin }) => {
  await admin.send(["CONFIG", "SET", "maxmemory", "0", "maxmemory-policy", "noeviction"]);
});

/** An origin whose answers are versions (`v<n>`, n counting calls across both caches); `hold(n)` holds call n. */
function versions() {
  let calls = 0;
  const holds = new Map<number, Promise<void>>();
  const started = new Map<number, ReturnType<typeof deferred>>();
  const startedOf = (n: number) => {
    let d = started.get(n);
    if (d === undefined) started.set(n, d = deferred());
    return d;
  };
  return {
    get calls() {
      return calls;
    },
    /** Hold call `n` until the returned function is called. */
    hold(n: number): () => void {
      const d = deferred();
      holds.set(n, d.promise);
      return () => d.resolve(undefined);
    },
    /** Resolves once call `n` has started. */
    started: (n: number) => startedOf(n).promise,
    load: async (): Promise<string> => {
      const n = ++calls;
      startedOf(n).resolve(undefined);
      await holds.get(n);
      return `v${n}`;
    },
  };
}

async function refuseWrites(admin: RedisClient): Promise<void> {
  await admin.send(["CONFIG", "SET", "maxmemory", "1"]);
  await rejects(() => admin.send(["SET", "probe", "x"]), RedisReplyError, /^OOM /);
}

function twoCaches(namespace: string, a: Strategy[], b: Strategy[] = [lease({ leaseMs: 10_000, waitMs: 10_000 })]) {
  const ev = events();
  const here = pipeline({ redis: db.redis, ttlMs: 60_000, namespace, onEvent: ev.onEvent }, ...a);
  const there = pipeline({ redis: db.other, ttlMs: 60_000, namespace }, ...b);
  return { here, there, ev, close: () => Promise.all([here.close(), there.close()]) };
}

for (const withNear of [false, true]) {
  test(
    `OOM under failOpen: after serving a value Redis refused to store, this process never serves an older one published afterwards${
      withNear ? " (near tier)" : ""
    }`,
    async ({ admin }) => {
      const o = versions();
      const { here, there, ev, close } = twoCaches(db.ns(), [
        ...(withNear ? [near()] : []),
        lease({ leaseMs: 10_000, waitMs: 10_000 }),
      ]);
      try {
        // Another process takes the lease (before writes are refused) and loads v1, slowly.
        const release1 = o.hold(1);
        const older = there.get("k", o.load);
        await o.started(1);
        await refuseWrites(admin);
        // This process cannot take a lease: it loads v2 itself and serves it, uncached.
        assert.is(await here.get("k", o.load), "v2");
        assert.is(here.stats().degraded, 1);
        // The storm ends; the older load still holds its lease and publishes v1.
        await admin.send(["CONFIG", "SET", "maxmemory", "0"]);
        release1();
        assert.is(await older, "v1");
        assert.is(await there.peek("k"), "v1", "Redis holds the older value");
        // Here, v2 was served: v1 must never follow it (twice: the near tier may now hold v1).
        assert.is(await here.get("k", o.load), "v2");
        assert.is(await here.get("k", o.load), "v2");
        assert.is(await here.peek("k"), "v2");
        assert.is(o.calls, 2);
        // A newer value (a set() elsewhere, begun clearly after v2's load: past the 20 ms within which two
        // processes' loads count as simultaneous, and past the kept value's mark, which may be up to twice this
        // cache's clock error late; 250 ms covers an estimate measured over a round trip of 200 ms) retires the kept one.
        await untilServerMoved(admin, 250);
        await there.set("k", "v9");
        await ev.reach("near-invalidation", withNear ? 1 : 0);
        assert.is(await here.get("k", o.load), "v9");
      } finally {
        await close();
      }
    },
  );
}

test("OOM under failOpen: two loads of one key here ending out of order: the older never displaces the newer value served", async ({ admin }) => {
  const o = versions();
  // No coalesce(): each caller loads for itself, as a background refresh beside a caller's load does.
  const { here, there, close } = twoCaches(db.ns(), [lease({ leaseMs: 10_000, waitMs: 10_000 })]);
  try {
    // Another process takes the lease before writes are refused and loads v1, slowly: it publishes last.
    const release1 = o.hold(1);
    const oldest = there.get("k", o.load);
    await o.started(1);
    await refuseWrites(admin);
    // Here two loads run at once, degraded: v2 is held while v3 ends and is served.
    const release2 = o.hold(2);
    const slower = here.get("k", o.load);
    await o.started(2);
    assert.is(await here.get("k", o.load), "v3");
    release2();
    assert.is(await slower, "v2", "its caller began before v3 was served");
    assert.is(here.stats().degraded, 2);
    await admin.send(["CONFIG", "SET", "maxmemory", "0"]);
    release1();
    assert.is(await oldest, "v1");
    assert.is(await there.peek("k"), "v1", "Redis holds the oldest value");
    // v3 was served here: neither v2 (kept last) nor v1 (stored) may follow it.
    assert.is(await here.get("k", o.load), "v3");
    assert.is(await here.peek("k"), "v3");
    assert.is(o.calls, 3);
  } finally {
    await close();
  }
});

test("OOM under failOpen: an epoch another process created just before writes were refused is the one this process stamps with", async ({ admin }) => {
  const o = versions();
  const namespace = db.ns();
  const epochKey = epochKeyOf(namespace);
  // This process' client, except that from its SET NX of the epoch on, its
  // commands on the epoch key wait (in order) for a gate: the other process
  // creates the epoch between this one's GET and its SET NX (and the GET
  // beside it), while this one's lease and load go on.
  let gate: Promise<void> | undefined;
  let held: Promise<void> | undefined;
  let reached: () => void = () => {};
  const atSet = new Promise<void>((r) => (reached = r));
  const redis = new Proxy(db.redis, {
    get(target, prop) {
      if (prop === "send") {
        return (args: readonly Arg[], options?: SendOptions) => {
          if (gate !== undefined && args[0] === "SET" && args[1] === epochKey && args.includes("NX")) {
            held = gate;
            gate = undefined;
            reached();
          }
          return held === undefined || args[1] !== epochKey
            ? target.send(args, options)
            : held.then(() => target.send(args, options));
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const opened = deferred();
  gate = opened.promise.then(() => {});
  const here = pipeline({ redis, ttlMs: 60_000, namespace }, lease({ leaseMs: 10_000, waitMs: 10_000 }));
  const there = pipeline({ redis: db.other, ttlMs: 60_000, namespace });
  try {
    const first = here.get("k", o.load);
    await atSet;
    // The other process creates the epoch and stores v1 under it; then writes are refused.
    assert.is(await there.get("k", o.load), "v1");
    await refuseWrites(admin);
    opened.resolve(undefined);
    // Here the SET NX is refused, but the GET beside it read the other process' epoch: v2 is loaded under it,
    // served uncached and kept.
    assert.is(await first, "v2");
    assert.is(here.stats().degraded, 1);
    // v1 is stored under the same epoch and is older: v2 goes on being served here.
    assert.is(await here.get("k", o.load), "v2");
    assert.is(await here.get("k", o.load), "v2");
    assert.is(o.calls, 2);
  } finally {
    await Promise.all([here.close(), there.close()]);
  }
});

test("OOM under failOpen: this process' invalidate(), set(), clear() and invalidateTags() retire the value it kept", async ({ admin }) => {
  const o = versions();
  const { here, there, close } = twoCaches(db.ns(), [lease({ leaseMs: 10_000, waitMs: 10_000 })]);
  try {
    for (const retire of ["invalidate", "set", "clear", "invalidateTags"] as const) {
      const n = o.calls;
      const tags = { tags: ["t"] };
      const release = o.hold(n + 1);
      const older = there.get(retire, o.load, tags);
      await o.started(n + 1);
      await refuseWrites(admin);
      assert.is(await here.get(retire, o.load, tags), `v${n + 2}`);
      await admin.send(["CONFIG", "SET", "maxmemory", "0"]);
      release();
      await older;
      if (retire === "invalidate") await here.invalidate(retire);
      else if (retire === "set") await here.set(retire, "set here", tags);
      else if (retire === "clear") await here.clear();
      else await here.invalidateTags(["t"]);
      // After an acknowledged invalidation the kept value is not served: a load (or the set value) is.
      assert.is(await here.get(retire, o.load, tags), retire === "set" ? "set here" : `v${n + 3}`, retire);
    }
  } finally {
    await close();
  }
});

test("OOM under failOpen without client tracking (RESP2): an older entry published afterwards is a miss here, never served", async ({ admin }) => {
  const o = versions();
  const resp2 = await db.client({ resp: 2 });
  const namespace = db.ns();
  const here = pipeline({ redis: resp2, ttlMs: 60_000, namespace }, lease({ leaseMs: 10_000, waitMs: 10_000 }));
  const there = pipeline({ redis: db.other, ttlMs: 60_000, namespace }, lease({ leaseMs: 10_000, waitMs: 10_000 }));
  try {
    const release1 = o.hold(1);
    const older = there.get("k", o.load);
    await o.started(1);
    await refuseWrites(admin);
    assert.is(await here.get("k", o.load), "v2");
    await admin.send(["CONFIG", "SET", "maxmemory", "0"]);
    release1();
    assert.is(await older, "v1");
    // The kept value's versions are not known between reads here: v1 is a miss, and a load gives v3.
    assert.is(await here.get("k", o.load), "v3");
    assert.is(await there.get("k", o.load), "v3");
  } finally {
    await Promise.all([here.close(), there.close()]);
  }
});

test("OOM under failOpen: an older value whose publication reaches Redis long after its load (its client's writes held) is never served after the newer value served here", async ({ admin }) => {
  const o = versions();
  const proxy = await startProxy(db.server.port);
  const slow = await db.client({ url: proxy.url, resp: 3 });
  const namespace = db.ns();
  const here = pipeline({ redis: db.redis, ttlMs: 60_000, namespace }, lease({ leaseMs: 10_000, waitMs: 10_000 }));
  const ev = events();
  const there = pipeline(
    { redis: slow, ttlMs: 60_000, namespace, onEvent: ev.onEvent },
    lease({ leaseMs: 10_000, waitMs: 10_000 }),
  );
  try {
    // Another process loads v1 under its lease; its publication leaves, and its link holds it.
    const release1 = o.hold(1);
    const older = there.get("k", o.load);
    await o.started(1);
    proxy.pause();
    release1();
    await ev.reach("load-end", 1);
    // Meanwhile writes are refused: this process loads v2 itself and serves it, uncached.
    await refuseWrites(admin);
    assert.is(await here.get("k", o.load), "v2");
    assert.is(here.stats().degraded, 1);
    await admin.send(["CONFIG", "SET", "maxmemory", "0"]);
    // v1's publication lands well after v2 was served: its write time says nothing of when its load ran.
    await untilServerMoved(admin, 50);
    proxy.resume();
    assert.is(await older, "v1");
    assert.is(await there.peek("k"), "v1", "Redis holds the older value, stamped after v2 was served");
    assert.is(await here.get("k", o.load), "v2");
    assert.is(await here.peek("k"), "v2");
    assert.is(o.calls, 2);
  } finally {
    await Promise.all([here.close(), there.close()]);
    await proxy.close();
  }
});

test("OOM under failOpen: a kept value stamped with an epoch made up while the key was gone is not served once the real one is known, nor the older entry under it", async ({ admin }) => {
  const o = versions();
  const namespace = db.ns();
  // Holds this process' first load between its stamp and its origin call (a busy event loop, in the chaos run).
  const stamped = deferred();
  const go = deferred();
  let first = true;
  const pause: Strategy = {
    name: "pause",
    load: (next) => async (req) => {
      if (first) {
        first = false;
        stamped.resolve();
        await go.promise;
      }
      return await next(req);
    },
  };
  const here = pipeline(
    { redis: db.redis, ttlMs: 60_000, namespace },
    pause,
    lease({ leaseMs: 10_000, waitMs: 10_000 }),
  );
  const there = pipeline({ redis: db.other, ttlMs: 60_000, namespace }, lease({ leaseMs: 10_000, waitMs: 10_000 }));
  try {
    // No epoch key, writes refused: this process stamps its load with a token of its own.
    await admin.send(["FLUSHALL"]);
    await refuseWrites(admin);
    const kept = here.get("k", o.load);
    await stamped.promise;
    // Writes come back for a moment: another process creates the real epoch and starts loading v1 under its lease.
    await admin.send(["CONFIG", "SET", "maxmemory", "0"]);
    const release1 = o.hold(1);
    const older = there.get("k", o.load);
    await o.started(1);
    await refuseWrites(admin);
    // This process' origin call comes after: v2, served uncached and kept.
    go.resolve();
    assert.is(await kept, "v2");
    assert.is(here.stats().degraded, 1);
    await admin.send(["CONFIG", "SET", "maxmemory", "0"]);
    release1();
    assert.is(await older, "v1");
    assert.is(await there.peek("k"), "v1", "Redis holds the older value, under the real epoch");
    // This process learns the real epoch (any read does): v2's made-up epoch is no longer current.
    assert.is(await here.get("other", o.load), "v3");
    // v1 is older than v2, which was served here: a load decides instead.
    assert.is(await here.get("k", o.load), "v4");
    assert.is(await here.get("k", o.load), "v4");
    assert.is(o.calls, 4);
  } finally {
    await Promise.all([here.close(), there.close()]);
  }
});

test("allkeys-lru below Redis' own baseline evicts every key (the lease among them) and refuses writes: the older load never publishes, this process never serves it", async ({ admin }) => {
  const o = versions();
  const { here, there, close } = twoCaches(db.ns(), [lease({ leaseMs: 10_000, waitMs: 10_000 })]);
  try {
    const release1 = o.hold(1);
    const older = there.get("k", o.load);
    await o.started(1);
    await admin.send(["CONFIG", "SET", "maxmemory-policy", "allkeys-lru", "maxmemory", "1"]);
    await rejects(() => admin.send(["SET", "probe", "x"]), RedisReplyError, /^OOM /);
    assert.is(await admin.send(["DBSIZE"]), 0, "every key was evicted");
    assert.is(await here.get("k", o.load), "v2");
    await admin.send(["CONFIG", "SET", "maxmemory", "0", "maxmemory-policy", "noeviction"]);
    release1();
    assert.is(await older, "v1", "its caller began before v2 was served; its lease is gone, so nothing is stored");
    assert.is(there.stats().lateRejected, 1);
    assert.is(await here.get("k", o.load), "v3");
    assert.is(await there.get("k", o.load), "v3");
  } finally {
    await close();
  }
});

test("an evicted lease key never lets an older load publish over a newer value", async ({ admin }) => {
  const o = versions();
  const { here, there, close } = twoCaches(db.ns(), [lease({ leaseMs: 10_000, waitMs: 10_000 })]);
  try {
    const release1 = o.hold(1);
    const older = there.get("k", o.load);
    await o.started(1);
    // Redis evicts the lease: a second caller takes a fresh one and loads v2.
    assert.is(await admin.send(["DEL", there.keys("k").lease]), 1);
    assert.is(await here.get("k", o.load), "v2");
    release1();
    // The older load's publication fails its token check; its caller gets what Redis holds.
    assert.is(await older, "v2");
    assert.is(there.stats().lateRejected, 1);
    assert.is(await there.get("k", o.load), "v2");
    assert.is(await here.get("k", o.load), "v2");
    assert.is(o.calls, 2);
  } finally {
    await close();
  }
});

for (const token of ["tag", "epoch"] as const) {
  test(`an evicted ${token} token never revives an entry invalidated before it was evicted`, async ({ admin }) => {
    const o = versions();
    const { here, there, close } = twoCaches(db.ns(), [lease()], [lease()]);
    try {
      const tags = { tags: ["t"] };
      assert.is(await here.get("k", o.load, tags), "v1");
      assert.is(await there.get("k", o.load, tags), "v1", "the other process knows the tokens too");
      if (token === "tag") await here.invalidateTags(["t"]);
      else await here.clear();
      const key = token === "tag"
        ? `${tagKeyPrefix(here.keys("k").data.split(":{")[0]!)}t`
        : epochKeyOf(here.keys("k").data.split(":{")[0]!);
      assert.is(await admin.send(["DEL", key]), 1);
      // A token key that comes back is a new token: v1 stays a miss in both processes.
      assert.is(await there.get("k", o.load, tags), "v2");
      assert.is(await here.get("k", o.load, tags), "v2");
    } finally {
      await close();
    }
  });
}

test("a load that began before a tag invalidation is a miss once published, even after the tag token was evicted", async ({ admin }) => {
  const o = versions();
  const { here, there, close } = twoCaches(db.ns(), [lease()], [lease({ leaseMs: 10_000, waitMs: 10_000 })]);
  try {
    const tags = { tags: ["t"] };
    const release1 = o.hold(1);
    const older = there.get("k", o.load, tags);
    await o.started(1);
    await here.invalidateTags(["t"]);
    assert.is(await admin.send(["DEL", `${tagKeyPrefix(here.keys("k").data.split(":{")[0]!)}t`]), 1);
    release1();
    assert.is(await older, "v1", "its own caller began before the invalidation");
    assert.is(await here.get("k", o.load, tags), "v2");
    assert.is(await there.get("k", o.load, tags), "v2");
  } finally {
    await close();
  }
});

test("a data key evicted mid-refresh: a caller elsewhere waits for the refresh and never gets the older value", async ({ admin }) => {
  const o = versions();
  let now = 0;
  const clock = () => now;
  const namespace = db.ns();
  const here = pipeline(
    { redis: db.redis, ttlMs: 1000, namespace, now: clock },
    swr({ staleMs: 60_000 }),
    lease({ leaseMs: 10_000, waitMs: 10_000 }),
  );
  const there = pipeline(
    { redis: db.other, ttlMs: 1000, namespace, now: clock },
    swr({ staleMs: 60_000 }),
    lease({ leaseMs: 10_000, waitMs: 10_000 }),
  );
  try {
    assert.is(await here.get("k", o.load), "v1");
    // Server time is what ages an entry: move this process' view of it past the fresh window.
    now += 1500;
    const release2 = o.hold(2);
    assert.is(await here.get("k", o.load), "v1", "served stale; the refresh (v2) runs in the background");
    await o.started(2);
    assert.is(await admin.send(["DEL", here.keys("k").data]), 1);
    const waiting = there.get("k", o.load);
    release2();
    assert.is(await waiting, "v2");
    assert.is(await here.get("k", o.load), "v2");
    assert.is(o.calls, 2);
  } finally {
    await Promise.all([here.close(), there.close()]);
  }
});

test.run();
