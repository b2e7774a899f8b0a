/**
 * A cache's life (strategies/pipeline/calls/lifecycle.ts): after `close()` every
 * method refuses with a `ClosedError` naming the method called and sends
 * nothing to Redis; `close()` waits for an invalidation already running.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Arg, SendOptions } from "../../../../resp/types.ts";
import { ClosedError, isClosedError } from "../../../../strategies/errors.ts";
import { coalesce } from "../../../../strategies/coalesce.ts";
import type { Strategy } from "../../../../strategies/contract.ts";
import { lease } from "../../../../strategies/lease.ts";
import { near } from "../../../../strategies/near.ts";
import type { Cache } from "../../../../strategies/cache.ts";
import { pipeline } from "../../../../strategies/pipeline/pipeline.ts";
import type { Loader } from "../../../../strategies/types.ts";
import { rejects } from "../../../support/assert.ts";
import { useRedis } from "../../../support/fixture.ts";
import { origin } from "../../../support/strategies.ts";
import { deferred, tick } from "../../../support/wait.ts";

const Life = suite("pipeline(): lifecycle");
const db = useRedis(Life, { prefix: "life" });

/**
 * The fixture's client, recording every command name sent; `hold(name)`
 * holds the next command of that name until the gate it returns is opened,
 * and `reached` resolves once it was sent.
 */
function recorded() {
  const sent: string[] = [];
  let held: { name: string; gate: Promise<void>; reached: () => void } | undefined;
  const redis = {
    send(args: readonly Arg[], options?: SendOptions) {
      const name = String(args[0]);
      sent.push(name);
      if (held !== undefined && held.name === name) {
        const { gate, reached } = held;
        held = undefined;
        reached();
        return gate.then(() => db.redis.send(args, options));
      }
      return db.redis.send(args, options);
    },
  };
  const hold = (name: string) => {
    const gate = deferred();
    const reached = deferred();
    held = { name, gate: gate.promise, reached: reached.resolve };
    return { open: gate.resolve, reached: reached.promise };
  };
  return { redis, sent, hold };
}

type AnyCache = Cache<unknown> & { getEntry?: (identity: string, loader: Loader<unknown>) => Promise<unknown> };

const methods: { method: string; call(cache: AnyCache, load: Loader<unknown>): Promise<unknown> }[] = [
  { method: "get", call: (cache, load) => cache.get("k", load) },
  { method: "get", call: (cache, load) => cache.get("k", load, { timeoutMs: 1000 }) },
  {
    method: "getMany",
    call: (cache) => cache.getMany(["a", "b"], (missing) => Promise.resolve(missing.map(() => "loaded"))),
  },
  { method: "set", call: (cache) => cache.set("k", "v") },
  { method: "peek", call: (cache) => cache.peek("k") },
  { method: "invalidate", call: (cache) => cache.invalidate("k") },
  { method: "invalidateTags", call: (cache) => cache.invalidateTags(["t"]) },
  { method: "clear", call: (cache) => cache.clear() },
  { method: "warm", call: (cache, load) => cache.warm(["a", "b"], load) },
  // Added by another change of release 3; tested here as soon as the cache has it.
  { method: "getEntry", call: (cache, load) => cache.getEntry!("k", load) },
];

for (const [i, { method, call }] of methods.entries()) {
  const how = methods.findIndex((m) => m.method === method) === i ? "" : " (with options)";
  Life(`${method}()${how} after close() refuses with a ClosedError naming it, and sends nothing`, async () => {
    const { redis, sent } = recorded();
    const cache: AnyCache = pipeline({ redis, ttlMs: 1000, namespace: db.ns() }, lease());
    if (method === "getEntry" && typeof cache.getEntry !== "function") return;
    await cache.set("k", "stored");
    await cache.close();
    const before = sent.length;
    const o = origin(() => "loaded");
    const error = await rejects(() => call(cache, o.load), ClosedError, `Cannot ${method}: the cache is closed`);
    assert.ok(isClosedError(error));
    assert.is((error as ClosedError).method, method);
    assert.equal(sent.slice(before), [], "a closed cache sent commands");
    assert.is(o.calls, 0);
    assert.ok(String(await db.redis.send(["GET", cache.keys("k").data])).endsWith(`"stored"`), "the value changed");
  });
}

// What each of the three writes sends first, held so close() is called while it runs.
const writes: { method: string; command: string; call(cache: AnyCache): Promise<unknown> }[] = [
  { method: "invalidate", command: "DEL", call: (cache) => cache.invalidate("k") },
  { method: "invalidateTags", command: "SET", call: (cache) => cache.invalidateTags(["t"]) },
  { method: "clear", command: "SET", call: (cache) => cache.clear() },
];

for (const { method, command, call } of writes) {
  Life(`close() waits for a running ${method}(), and refuses calls made meanwhile`, async () => {
    const { redis, hold } = recorded();
    const cache: AnyCache = pipeline({ redis, ttlMs: 1000, namespace: db.ns() }, lease());
    await cache.set("k", "stored");
    const held = hold(command);
    const running = call(cache);
    await held.reached;
    let closed = false;
    const closing = cache.close().then(() => (closed = true));
    await rejects(() => call(cache), ClosedError, `Cannot ${method}: the cache is closed`);
    // A twin with nothing running goes through the same close() steps and
    // started later: once it has closed, a close() that did not wait for the
    // held command would have resolved too.
    const twin = pipeline({ redis: recorded().redis, ttlMs: 1000, namespace: db.ns() }, lease());
    await twin.close();
    assert.is(closed, false, `close() resolved while ${method}() was still running`);
    held.open();
    await running;
    await closing;
    if (method === "invalidate") assert.is(await db.redis.send(["EXISTS", cache.keys("k").data]), 0);
  });
}

Life(
  "close() of a RESP3 cache resolves once its CLIENT TRACKING OFF is answered: nothing of its own left pending",
  async () => {
    const redis = await db.client({ resp: 3 });
    for (const strategies of [[near()], [lease()]]) {
      const cache = pipeline({ redis, ttlMs: 60_000, namespace: db.ns() }, ...strategies);
      assert.is(await cache.get("k", () => "v"), "v");
      assert.is(redis.tracking, true, "the reads were tracked");
      await cache.close();
      assert.is(redis.tracking, false);
      assert.is(redis.pending, 0, `a command was still pending when close() resolved (${strategies[0]!.name})`);
    }
  },
);

Life("close() with no timeout waits for a get whose loader is still running, and serves it", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, lease());
  const o = origin(() => "loaded");
  const gate = deferred();
  o.hold = gate.promise;
  const running = cache.get("k", o.load);
  await o.called();
  let closed = false;
  const closing = cache.close().then(() => (closed = true));
  await tick();
  assert.is(closed, false, "close() resolved while a load ran");
  gate.resolve();
  assert.is(await running, "loaded");
  await closing;
  assert.ok(await db.redis.send(["EXISTS", cache.keys("k").data]), "the load was not stored");
});

Life(
  "close({ timeoutMs }) ends a get whose loader never settles: ClosedError, its signal fires, its lease is released",
  async () => {
    const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, lease({ leaseMs: 60_000 }));
    const o = origin(() => "never");
    o.hold = new Promise(() => {}); // A loader that ignores its signal and never settles.
    const running = cache.get("k", o.load);
    running.catch(() => {});
    await o.called();
    const lease_ = cache.keys("k").lease;
    assert.ok(await db.redis.send(["EXISTS", lease_]), "the load holds its lease");
    await cache.close({ timeoutMs: 50 });
    const error = await rejects(() => running, ClosedError, "Cannot get: the cache is closed");
    assert.ok(isClosedError(error));
    assert.is(o.signals[0]!.aborted, true, "the loader's signal did not fire");
    // Released at once, not at its 60 s expiry: another process takes over now.
    assert.is(await db.redis.send(["EXISTS", lease_]), 0, "the lease is still held");
    // Refused from then on, as after any close().
    await rejects(() => cache.get("k", o.load), ClosedError, "Cannot get: the cache is closed");
  },
);

Life(
  "close({ timeoutMs }) that runs out while a get still reads: the get loads nothing and rejects with ClosedError",
  async () => {
    const { redis, hold } = recorded();
    const cache = pipeline<string>({ redis, ttlMs: 60_000, namespace: db.ns() }, lease({ leaseMs: 60_000 }));
    // The epoch and the clock are read first, so the held command is the get's own GET.
    assert.is(await cache.get("warm", () => "v"), "v");
    const held = hold("GET");
    const o = origin(() => "loaded after close");
    const reading = cache.get("k", o.load);
    reading.catch(() => {});
    await held.reached;
    await cache.close({ timeoutMs: 20 });
    held.open();
    await rejects(() => reading, ClosedError, "Cannot get: the cache is closed");
    assert.is(o.calls, 0, "a load started after close() resolved");
    assert.is(await db.redis.send(["EXISTS", cache.keys("k").lease]), 0, "a lease was taken after close() resolved");
  },
);

Life("close({ timeoutMs }) refuses a bad bound, naming it", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 1000, namespace: db.ns() });
  await rejects(
    () => cache.close({ timeoutMs: -1 }),
    RangeError,
    "Cannot close: 'timeoutMs' must be a non-negative integer, got -1",
  );
  await cache.close({ timeoutMs: 1000 });
});

Life(
  "getMany of 500 identities with a signal, and warm with concurrency 50, add no listener warning, with or without coalesce() and lease() (each listens to every identity's request)",
  async () => {
    const warnings: Error[] = [];
    const listen = (w: Error) => warnings.push(w);
    process.on("warning", listen);
    try {
      for (const strategies of [[], [coalesce(), lease()]]) await noWarning(strategies);
    } finally {
      process.off("warning", listen);
    }
    assert.equal(warnings.map((w) => w.message), []);
  },
);

async function noWarning(strategies: Strategy[]) {
  // 500 leases at once on 2 busy shared cores may take more than the default 1 s per command; this test is about
  // listeners, not timeouts.
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), commandTimeoutMs: 30_000 },
    ...strategies,
  );
  const controller = new AbortController();
  const ids = Array.from({ length: 500 }, (_, i) => `id${i}`);
  const values = await cache.getMany(ids, (missing) => Promise.resolve(missing.map((m) => `v:${m}`)), {
    signal: controller.signal,
    timeoutMs: 30_000,
  });
  assert.is(values.length, 500);
  const more = Array.from({ length: 200 }, (_, i) => `w${i}`);
  const report = await cache.warm(more, ({ identity }) => `v:${identity}`, {
    concurrency: 50,
    signal: controller.signal,
  });
  assert.is(report.loaded, 200);
  await cache.close();
  // Warnings are emitted on the next tick.
  await tick();
}

Life.run();
