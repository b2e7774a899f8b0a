import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ConnectionError, TimeoutError } from "../../../resp/errors.ts";
import type { Arg, SendOptions } from "../../../resp/types.ts";
import { coalesce } from "../../../strategies/coalesce.ts";
import { jitter } from "../../../strategies/jitter.ts";
import { lease } from "../../../strategies/lease.ts";
import type { Cache } from "../../../strategies/cache.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import { swr } from "../../../strategies/swr.ts";
import { xfetch } from "../../../strategies/xfetch.ts";
import type { Strategy } from "../../../strategies/contract.ts";
import { rejects } from "../../support/assert.ts";
import { client, useRedis } from "../../support/fixture.ts";
import { events, origin, plant, type Planted } from "../../support/strategies.ts";
import { deferred, tick } from "../../support/wait.ts";

const Pipeline = suite("pipeline()");
const db = useRedis(Pipeline, { prefix: "pipe", clients: 2 });

Pipeline("pipeline() rejects bad options with messages naming the setting", async () => {
  const r = (options: unknown, ...s: Strategy[]) => () => pipeline(options as never, ...s);
  await rejects(
    r(undefined),
    TypeError,
    "Cannot create pipeline: 'redis' must be an object with a send(command, options) function",
  );
  await rejects(
    r({ redis: db.redis }),
    RangeError,
    "Cannot create pipeline: 'ttlMs' must be a positive integer, got undefined",
  );
  await rejects(
    r({ ttlMs: 10 }),
    TypeError,
    "Cannot create pipeline: 'redis' must be an object with a send(command, options) function",
  );
  await rejects(
    r({ redis: db.redis, ttlMs: 0 }),
    RangeError,
    "Cannot create pipeline: 'ttlMs' must be a positive integer, got 0",
  );
  await rejects(
    r({ redis: db.redis, ttlMs: 1.5 }),
    RangeError,
    "Cannot create pipeline: 'ttlMs' must be a positive integer, got 1.5",
  );
  await rejects(
    r({ redis: db.redis, ttlMs: 10, negativeTtlMs: -1 }),
    RangeError,
    "Cannot create pipeline: 'negativeTtlMs' must be a non-negative integer, got -1",
  );
  await rejects(
    r({ redis: db.redis, ttlMs: 10, commandTimeoutMs: 0 }),
    RangeError,
    "Cannot create pipeline: 'commandTimeoutMs' must be a positive integer, got 0",
  );
  await rejects(
    r({ redis: db.redis, ttlMs: 10, namespace: "a{b}" }),
    TypeError,
    "Cannot create pipeline: 'namespace' must not contain whitespace, control characters or any of { } * ? [ ] \\ " +
      `(it prefixes keys as '<namespace>:{' and ACL patterns as '~<namespace>:{*'), got "a{b}" ("{" at index 1)`,
  );
  await rejects(
    r({ redis: db.redis, ttlMs: 10, namespace: "" }),
    TypeError,
    `Cannot create pipeline: 'namespace' must be a non-empty string, got ""`,
  );
  await rejects(
    r({ redis: db.redis, ttlMs: 10, codec: "xml" }),
    TypeError,
    `Cannot create pipeline: 'codec' must be "json", "string", "bytes" or an object with encode and decode functions, got "xml"`,
  );
  await rejects(
    r({ redis: db.redis, ttlMs: 10, wakeups: "push" }),
    TypeError,
    `Cannot create pipeline: 'wakeups' must be "auto", "poll" or a RESP3 client with onPush()`,
  );
  await rejects(
    r({ redis: db.redis, ttlMs: 10, now: 5 }),
    TypeError,
    "Cannot create pipeline: 'now' must be a function, got number",
  );
  await rejects(
    r({ redis: db.redis, ttlMs: 10, random: "x" }),
    TypeError,
    "Cannot create pipeline: 'random' must be a function, got string",
  );
  await rejects(
    r({ redis: db.redis, ttlMs: 10, onEvent: {} }),
    TypeError,
    "Cannot create pipeline: 'onEvent' must be a function, got object",
  );
  await rejects(r(7), TypeError, "Cannot create pipeline: options must be an object, got number");
  await rejects(
    r({ redis: db.redis, ttlMs: 10 }, null as never),
    TypeError,
    "Cannot create pipeline: strategy 1 must be an object returned by a strategy factory",
  );
});

Pipeline("pipeline() refuses a strategy object that already joined another cache", async () => {
  const shared = coalesce();
  const first = pipeline({ redis: db.redis, ttlMs: 100 }, shared);
  await rejects(
    () => pipeline({ redis: db.redis, ttlMs: 100 }, shared),
    TypeError,
    "Cannot create pipeline: this coalesce() strategy already belongs to another cache; call coalesce() once per pipeline",
  );
  await first.close();
});

Pipeline("get() rejects bad call options and loaders with messages naming them", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 100, namespace: db.ns() });
  await rejects(
    () => cache.get("k", undefined as never),
    TypeError,
    "Cannot get: 'loader' must be a function, got undefined",
  );
  await rejects(
    () => cache.get("k", () => 1, { timeoutMs: 0 }),
    RangeError,
    "Cannot get: 'timeoutMs' must be a positive integer, got 0",
  );
  await rejects(
    () => cache.get("k", () => 1, { ttlMs: -5 }),
    RangeError,
    "Cannot get: 'ttlMs' must be a positive integer, got -5",
  );
  await rejects(
    () => cache.get("", () => 1),
    TypeError,
    `Cannot derive keys: the identity must be a non-empty string or a non-empty array of strings and finite numbers, got ""`,
  );
  await rejects(
    () => cache.get(["a", {} as never], () => 1),
    TypeError,
    `Cannot derive keys: the identity must be a non-empty string or a non-empty array of strings and finite numbers, got ["a",{}]`,
  );
  await rejects(() => cache.get([], () => 1), TypeError, /got \[\]$/);
  await cache.close();
});

Pipeline("keys() puts data and lease in one hash tag and tells identities apart", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 100, namespace: "app" });
  const k = cache.keys(["user", 42]);
  assert.match(k.data, /^app:\{[A-Za-z0-9_-]{43}\}:data$/);
  assert.is(k.lease, k.data.replace(/:data$/, ":lease"));
  // Same slot: Redis computes it from the hash tag.
  assert.is(
    await db.redis.send(["CLUSTER", "KEYSLOT", k.data]).catch(() => "n/a"),
    await db.redis.send(["CLUSTER", "KEYSLOT", k.lease]).catch(() => "n/a"),
  );
  const tags = new Set([
    cache.keys("a").data,
    cache.keys(["a"]).data,
    cache.keys(["a", 1]).data,
    cache.keys(["a", "1"]).data,
    cache.keys(["a1"]).data,
  ]);
  assert.is(tags.size, 5);
  assert.is(cache.keys(["user", 42]).data, k.data);
  await cache.close();
});

Pipeline("a cold burst of 50 gets through 2 clients without strategies costs 50 origin calls", async () => {
  const namespace = db.ns();
  const seen = events();
  const a = pipeline({ redis: db.redis, ttlMs: 5000, namespace, onEvent: seen.onEvent });
  const b = pipeline({ redis: db.other, ttlMs: 5000, namespace, onEvent: seen.onEvent });
  const o = origin(() => "v");
  const hold = deferred();
  o.hold = hold.promise;
  const calls = Array.from({ length: 50 }, (_, i) => (i % 2 ? a : b).get("hot", o.load));
  // Every caller has missed before any value exists: nothing stops the herd.
  await seen.reach("load-start", 50);
  hold.resolve();
  const values = await Promise.all(calls);
  assert.is(o.calls, 50);
  assert.ok(values.every((v) => v === "v"));
  await Promise.all([a.close(), b.close()]);
});

Pipeline("empty strings, 0, false and null are hits, not misses", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 5000, namespace: db.ns() }, coalesce(), lease());
  for (const value of ["", 0, false, null]) {
    const o = origin(() => value);
    assert.is(await cache.get(["falsy", String(value)], o.load), value);
    assert.is(await cache.get(["falsy", String(value)], o.load), value);
    assert.is(o.calls, 1, `value ${JSON.stringify(value)} was loaded again`);
  }
  const stats = cache.stats();
  assert.is(stats.hits, 4);
  assert.is(stats.misses, 4);
  await cache.close();
});

Pipeline(
  "a data key of another type (another writer's hash) is a miss counted in decodeErrors, then overwritten",
  async () => {
    // Without lease(): its re-check after winning would read (and count) the hash once more.
    const cache = pipeline({ redis: db.redis, ttlMs: 5000, namespace: db.ns() }, coalesce());
    const o = origin(() => "fresh");
    // Tracking on and the server clock measured: later gets read with their one GET.
    assert.is(await cache.get("warm-up", o.load), "fresh");
    await db.other.send(["HSET", cache.keys("typed").data, "field", "value"]);
    assert.is(await cache.get("typed", o.load), "fresh");
    assert.is(cache.stats().decodeErrors, 1);
    assert.is(await cache.get("typed", o.load), "fresh");
    assert.is(o.calls, 2, "the hash was replaced by the load's publish, then hit");
    assert.is(cache.stats().hits, 1);
    await cache.close();
  },
);

Pipeline("a client clock an hour off behaves exactly like a correct one", async () => {
  const namespace = db.ns();
  const build = (offset: number) =>
    pipeline(
      { redis: db.redis, ttlMs: 60_000, namespace, now: () => performance.now() + offset, random: () => 0.5 },
      swr({ staleMs: 60_000 }),
      xfetch(),
      coalesce(),
      lease(),
      jitter({ spreadMs: 1000 }),
    );
  const skewed = build(3_600_000);
  const right = build(0);
  const behind = build(-3_600_000);
  const o = origin((call) => `v${call}`);
  assert.is(await skewed.get("clock", o.load), "v1");
  // Written by the skewed client, judged by the others from the server's PTTL alone.
  assert.is(await right.get("clock", o.load), "v1");
  assert.is(await behind.get("clock", o.load), "v1");
  assert.is(await skewed.get("clock", o.load), "v1");
  assert.is(o.calls, 1);
  const pttl = Number(await db.redis.send(["PTTL", skewed.keys("clock").data]));
  // Fresh window 59.5 s (random 0.5 over a 1 s spread) plus the 60 s stale window.
  assert.ok(pttl > 110_000 && pttl <= 119_500, `pttl ${pttl}`);
  assert.is(skewed.stats().hits, 1);
  assert.is(right.stats().hits, 1);
  assert.is(behind.stats().hits, 1);
  assert.is(skewed.stats().earlyRefreshes + right.stats().earlyRefreshes + behind.stats().earlyRefreshes, 0);
  await Promise.all([skewed.close(), right.close(), behind.close()]);
});

Pipeline("an unreachable Redis rejects get() in bounded time and never calls the origin", async () => {
  const o = origin(() => "v");
  // A paused server: commands are written but never answered.
  const paused = pipeline(
    { redis: db.redis, ttlMs: 1000, namespace: db.ns(), commandTimeoutMs: 100 },
    coalesce(),
    lease(),
  );
  db.server.signal("SIGSTOP");
  try {
    await rejects(
      () => paused.get("down", o.load),
      TimeoutError,
      /^Command (GET|EVAL|EVALSHA) timed out: '(timeoutMs|commandTimeoutMs)' of 100 ms ran out$/,
    );
    // The caller's timeoutMs bounds the whole get, the clock's first measurement included.
    await rejects(
      () => paused.get("down", o.load, { timeoutMs: 50 }),
      TimeoutError,
      `The get of ${paused.keys("down").data} timed out: 'timeoutMs' of 50 ms ran out`,
    );
  } finally {
    db.server.signal("SIGCONT");
  }
  // A connection that is gone: the client fails fast.
  const gone = await client(db.server.url);
  gone.destroy();
  const closed = pipeline({ redis: gone, ttlMs: 1000, namespace: db.ns() }, lease());
  await rejects(() => closed.get("down", o.load), ConnectionError, "The client is closed");
  assert.is(o.calls, 0);
  assert.is(paused.stats().loads + closed.stats().loads, 0);
  await paused.close();
  await closed.close();
});

Pipeline("get() with timeoutMs rejects with TimeoutError naming the key and counts it", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() });
  const hold = deferred();
  const key = cache.keys("slow").data;
  await rejects(
    () => cache.get("slow", () => hold.promise.then(() => "late"), { timeoutMs: 30 }),
    TimeoutError,
    `The get of ${key} timed out: 'timeoutMs' of 30 ms ran out`,
  );
  assert.is(cache.stats().timeouts, 1);
  hold.resolve();
  await cache.close();
  // The load the caller left still published.
  assert.is(await db.redis.send(["EXISTS", key]), 1);
});

Pipeline("get() with both a signal and timeoutMs ends at whichever comes first", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() });
  const hold = deferred();
  const o = origin(() => "v");
  o.hold = hold.promise;
  const controller = new AbortController();
  const call = cache.get("both", o.load, { signal: controller.signal, timeoutMs: 60_000 });
  await o.called();
  controller.abort(new Error("signal first"));
  await rejects(() => call, Error, "signal first");
  await rejects(
    () => cache.get("both2", o.load, { signal: new AbortController().signal, timeoutMs: 20 }),
    TimeoutError,
    `The get of ${cache.keys("both2").data} timed out: 'timeoutMs' of 20 ms ran out`,
  );
  await rejects(
    () => cache.get("both3", o.load, { signal: AbortSignal.abort(new Error("already")), timeoutMs: 20 }),
    Error,
    "already",
  );
  assert.is(cache.stats().timeouts, 1);
  hold.resolve();
  await cache.close();
});

Pipeline("strategies/mod.ts exports exactly the public values", async () => {
  const mod = await import("../../../strategies/mod.ts");
  assert.equal(Object.keys(mod).sort(), [
    "ClosedError",
    "CodecError",
    "OverloadedError",
    "TimeoutError",
    "cacheStatus",
    "coalesce",
    "compressed",
    "isClosedError",
    "isCodecError",
    "isOverloadedError",
    "isTimeoutError",
    "jitter",
    "lease",
    "limit",
    "near",
    "pipeline",
    "prometheus",
    "swr",
    "xfetch",
  ]);
});

Pipeline("get() rejects an already aborted signal without calling the origin", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, lease());
  const o = origin(() => "v");
  const reason = new Error("caller left");
  await rejects(() => cache.get("aborted", o.load, { signal: AbortSignal.abort(reason) }), Error, "caller left");
  assert.is(o.calls, 0);
  await cache.close();
});

Pipeline("onEvent sees every counted event and a throwing hook never breaks a get", async () => {
  const seen: string[] = [];
  const cache = pipeline({
    redis: db.redis,
    ttlMs: 1000,
    namespace: db.ns(),
    onEvent(event) {
      seen.push(event.type);
      throw new Error("metrics are down");
    },
  }, lease());
  assert.is(await cache.get("ev", () => "v"), "v");
  assert.is(await cache.get("ev", () => "v"), "v");
  assert.equal(seen, ["invalidation-mode", "miss", "lease-won", "load-start", "load-end", "hit"]);
  assert.is(cache.stats().eventErrors, 6);
  const asyncHook = pipeline({
    redis: db.redis,
    ttlMs: 1000,
    namespace: db.ns(),
    onEvent: () => Promise.reject(new Error("x")) as never,
  });
  assert.is(await asyncHook.get("ev", () => "v"), "v");
  await new Promise((r) => setTimeout(r, 0));
  assert.is(asyncHook.stats().eventErrors, 4);
  await cache.close();
  await asyncHook.close();
});

Pipeline("load-end carries the load's duration, and the error when it failed", async () => {
  const ev = events();
  let t = 1000;
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns(), onEvent: ev.onEvent, now: () => t });
  await cache.get("d", () => {
    t += 25;
    return "v";
  });
  const boom = new Error("origin down");
  await rejects(() => cache.get("e", () => Promise.reject(boom)), Error, "origin down");
  const ends = ev.seen.filter((e) => e.type === "load-end");
  assert.equal(ends[0], { type: "load-end", key: cache.keys("d").data, durationMs: 25 });
  assert.is((ends[1] as { error?: unknown }).error, boom);
  assert.is(cache.stats().loadErrors, 1);
  await cache.close();
});

Pipeline("a strategy calling next() twice gets an error instead of a second load", async () => {
  const twice: Strategy = {
    name: "twice",
    fill: (next) =>
      async function twiceFill(req) {
        await next(req);
        return next(req);
      },
  };
  const o = origin(() => "v");
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, twice);
  await rejects(
    () => cache.get("t", o.load),
    Error,
    "Cannot fill: the 'twice' strategy called next() twice for one request",
  );
  assert.is(o.calls, 1);
  const rebuilt: Strategy = { name: "rebuilt", fill: (next) => (req) => next({ keys: req.keys } as never) };
  const bad = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, rebuilt);
  await rejects(
    () => bad.get("t", o.load),
    TypeError,
    "Cannot fill: the 'rebuilt' strategy must pass the request on as a copy ({ ...req })",
  );
  await cache.close();
  await bad.close();
});

Pipeline("an adapter with only send() works, and string replies decode", async () => {
  // What an ioredis adapter looks like: no buffers, no push, no generation.
  const adapter = {
    send: (args: readonly Arg[], options?: SendOptions) => db.redis.send(args, { timeoutMs: options?.timeoutMs }),
  };
  const cache = pipeline({ redis: adapter, ttlMs: 1000, namespace: db.ns() }, coalesce(), lease());
  const o = origin(() => ({ ok: true }));
  assert.equal(await cache.get("adapter", o.load), { ok: true });
  assert.equal(await cache.get("adapter", o.load), { ok: true });
  assert.is(o.calls, 1);
  await cache.close();
});

Pipeline("close() refuses new gets and waits for a load whose caller left", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, lease());
  const hold = deferred();
  const o = origin(() => "kept");
  o.hold = hold.promise;
  const controller = new AbortController();
  const call = cache.get("orphan", o.load, { signal: controller.signal });
  await o.called();
  controller.abort(new Error("gone"));
  await rejects(() => call, Error, "gone");
  let closed = false;
  const closing = cache.close().then(() => (closed = true));
  await rejects(() => cache.get("x", o.load), Error, "Cannot get: the cache is closed");
  // A twin with nothing running goes through the same close() steps (no I/O
  // either: neither cache ever waited, so neither subscribed) and started
  // later: once it has closed, a close() that did not wait for the held load
  // would have resolved too.
  const twin = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, lease());
  await twin.close();
  assert.is(closed, false, "close() resolved while the load was still held");
  hold.resolve();
  await closing;
  assert.ok(String(await db.redis.send(["GET", cache.keys("orphan").data])).endsWith(`"kept"`));
});

/** `redis`, except that the first GET is held until `gate` resolves; `reading` resolves when it is. */
function holdFirstGet(gate: Promise<void>) {
  const reading = deferred();
  let held = false;
  const adapter = {
    send(args: readonly Arg[], options?: SendOptions) {
      if (held || args[0] !== "GET") return db.redis.send(args, options);
      held = true;
      reading.resolve();
      return gate.then(() => db.redis.send(args, options));
    },
  };
  return { adapter, reading: reading.promise };
}

// A get still reading when close() is called is served: a miss loads and
// publishes, and close() resolves only once it has; a stale hit is served
// but starts no background refresh (nothing a cache starts may outlive close()).
const readPhase: {
  what: string;
  strategies: () => Strategy[];
  planted?: Planted;
  loads: number;
  check(call: Promise<unknown>, cache: Cache<unknown>): Promise<void>;
}[] = [
  {
    what: "miss, which loads and publishes before close() resolves",
    strategies: () => [],
    loads: 1,
    async check(call, cache) {
      assert.is(await call, "miss, which loads and publishes before close() resolves after close");
      assert.ok(await db.redis.send(["EXISTS", cache.keys("k").data]), "the load was not stored before close()");
    },
  },
  {
    what: "stale hit, which starts no background refresh",
    strategies: () => [swr({ staleMs: 60_000 })],
    // Past its fresh window, well inside its stale one: served stale and refreshed.
    planted: { payload: '"stale"', freshMs: 1_000, staleMs: 60_000, ageMs: 2_000 },
    loads: 0,
    async check(call, cache) {
      assert.is(await call, "stale");
      assert.equal([cache.stats().stale, cache.stats().loads], [1, 0]);
    },
  },
];
for (const c of readPhase) {
  Pipeline(`close() waits for a get still in its read phase: a ${c.what}`, async () => {
    const gate = deferred();
    const { adapter, reading } = holdFirstGet(gate.promise);
    const cache = pipeline<unknown>({ redis: adapter, ttlMs: 1000, namespace: db.ns() }, ...c.strategies());
    // Planted through the real client: the adapter holds its first GET.
    if (c.planted) await plant(db.redis, cache, "k", c.planted);
    const o = origin(() => `${c.what} after close`);
    const call = cache.get("k", o.load);
    call.catch(() => {}); // Checked below, once close() resolved.
    await reading;
    let closed = false;
    const closing = cache.close().then(() => (closed = true));
    await tick();
    const closedWhileReading = closed;
    gate.resolve();
    await closing;
    await c.check(call, cache);
    assert.is(o.calls, c.loads, "origin calls");
    assert.is(closedWhileReading, false, "close() resolved while a get was still reading");
  });
}

Pipeline.run();
