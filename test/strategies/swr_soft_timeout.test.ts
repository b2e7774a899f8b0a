import { suite } from "uvu";
import * as assert from "uvu/assert";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { swr } from "../../strategies/swr.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import { events, origin, plant } from "../support/strategies.ts";
import { deferred } from "../support/wait.ts";

const Soft = suite("swr({ softTimeoutMs })");
const db = useRedis(Soft, { prefix: "soft", clients: 2 });

// An entry past its fresh and stale windows, inside its error window: a get loads, and may serve it if the load fails.
const inErrorWindow = { payload: '"old"', freshMs: 1_000, staleMs: 0, ifErrorMs: 600_000, ageMs: 2_000 };

Soft("softTimeoutMs must be a positive integer, and needs ifErrorMs", async () => {
  await rejects(
    () => swr({ staleMs: 0, ifErrorMs: 1_000, softTimeoutMs: 0 }),
    RangeError,
    "Cannot create swr: 'softTimeoutMs' must be a positive integer, got 0",
  );
  await rejects(
    () => swr({ staleMs: 1_000, softTimeoutMs: 100 }),
    RangeError,
    "Cannot create swr: 'softTimeoutMs' needs 'ifErrorMs' above 0 (the old value served on a soft timeout lives in the error window)",
  );
  assert.is(swr({ staleMs: 0, ifErrorMs: 1, softTimeoutMs: 5 }).softTimeoutMs, 5);
});

Soft(
  "a loading caller and the callers joined to its load get the old value, stale; the load goes on and publishes",
  async () => {
    const log = events();
    const cache = pipeline<string>(
      { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), onEvent: log.onEvent },
      swr({ staleMs: 0, ifErrorMs: 600_000, softTimeoutMs: 1 }),
      coalesce(),
      lease(),
    );
    await plant(db.redis, cache, "k", inErrorWindow);
    const o = origin(() => "new");
    const gate = deferred<void>();
    // Held until every caller got its answer: the soft timeout is the only way they can answer.
    o.hold = gate.promise;
    const owner = cache.getEntry("k", o.load);
    await o.called(1);
    const joined = cache.getEntry("k", o.load);
    const [a, b] = await Promise.all([owner, joined]);
    for (const r of [a, b]) {
      assert.equal([r.value, r.source, r.stale, r.stored], ["old", "redis", true, false]);
      // 1 s past fresh, within the clock estimate's error (half a round trip).
      assert.ok(r.freshForMs <= -950, `freshForMs ${r.freshForMs}`);
    }
    const stats = cache.stats();
    assert.equal([stats.softTimeouts, stats.stale, stats.coalesced, stats.loads], [2, 2, 1, 1]);
    gate.resolve();
    await log.reach("load-end", 1);
    // close() waits for the load still running; it published.
    await cache.close();
    const after = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: cache.keys("k").data.split(":{")[0]! });
    assert.is(await after.get("k", () => "unused"), "new");
    await after.close();
  },
);

Soft("a caller waiting on another owner's lease gets the old value after softTimeoutMs", async () => {
  const ns = db.ns();
  const owner = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: ns }, lease({ waitMs: 60_000 }));
  const waiter = pipeline<string>(
    { redis: db.other, ttlMs: 60_000, namespace: ns },
    swr({ staleMs: 0, ifErrorMs: 600_000, softTimeoutMs: 1 }),
    lease({ waitMs: 60_000 }),
  );
  await plant(db.redis, owner, "k", inErrorWindow);
  const o = origin(() => "new");
  const gate = deferred<void>();
  o.hold = gate.promise;
  const owning = owner.get("k", o.load);
  await o.called(1);
  const r = await waiter.getEntry("k", () => "waiter must not load");
  assert.equal([r.value, r.stale], ["old", true]);
  // It lost the lease to the owner and loaded nothing: its answer came from the soft timeout.
  const stats = waiter.stats();
  assert.equal([stats.softTimeouts, stats.leasesWon, stats.loads, o.calls], [1, 0, 0, 1]);
  gate.resolve();
  assert.is(await owning, "new");
  await Promise.all([owner.close(), waiter.close()]);
});

Soft(
  "a load that finishes before softTimeoutMs is served as usual; one that fails after it is counted, not thrown",
  async () => {
    const log = events();
    const ns = db.ns();
    const quick = pipeline<string>(
      { redis: db.redis, ttlMs: 60_000, namespace: ns },
      swr({ staleMs: 0, ifErrorMs: 600_000, softTimeoutMs: 600_000 }),
    );
    await plant(db.redis, quick, "k", inErrorWindow);
    const r = await quick.getEntry("k", () => "new");
    assert.equal([r.value, r.source, r.stale, r.stored], ["new", "origin", false, true]);
    assert.is(quick.stats().softTimeouts, 0);
    await quick.close();

    const failing = pipeline<string>(
      { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), onEvent: log.onEvent },
      swr({ staleMs: 0, ifErrorMs: 600_000, softTimeoutMs: 1 }),
    );
    await plant(db.redis, failing, "k", inErrorWindow);
    const gate = deferred<void>();
    const before = Number(await db.redis.send(["PTTL", failing.keys("k").data]));
    assert.is(
      await failing.get("k", async () => {
        await gate.promise;
        throw new Error("origin down");
      }),
      "old",
    );
    gate.resolve();
    await log.reach("load-end", 1);
    await failing.close();
    assert.is(failing.stats().loadErrors, 1);
    // The failed load stored nothing: the old entry keeps its deadline.
    assert.ok(Number(await db.redis.send(["PTTL", failing.keys("k").data])) <= before);
  },
);

Soft("without softTimeoutMs a caller in the error window waits for its load", async () => {
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns() },
    swr({ staleMs: 0, ifErrorMs: 600_000 }),
  );
  await plant(db.redis, cache, "k", inErrorWindow);
  const gate = deferred<void>();
  let answered = false;
  const call = cache.get("k", async () => {
    await gate.promise;
    return "new";
  }).then((v) => {
    answered = true;
    return v;
  });
  // Several turns of the event loop and a Redis round trip: still waiting on the held load.
  await db.redis.send(["PING"]);
  await new Promise((r) => setImmediate(r));
  assert.is(answered, false);
  gate.resolve();
  assert.is(await call, "new");
  await cache.close();
});

Soft("getMany serves an identity in the error window its old value after softTimeoutMs; its load goes on", async () => {
  const log = events();
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), onEvent: log.onEvent },
    swr({ staleMs: 0, ifErrorMs: 600_000, softTimeoutMs: 1 }),
    lease(),
  );
  await plant(db.redis, cache, "old", inErrorWindow);
  const gate = deferred<void>();
  let calls = 0;
  // Held: only the soft timeout can answer.
  const values = await cache.getMany(["old"], async (missing) => {
    calls++;
    await gate.promise;
    return missing.map((id) => `${id} loaded`);
  });
  assert.equal(values, ["old"]);
  assert.equal([cache.stats().softTimeouts, cache.stats().stale], [1, 1]);
  gate.resolve();
  // The load may start after the caller got its answer (the soft timeout runs from the call); it does start, once.
  await log.reach("load-end", 1);
  assert.is(calls, 1);
  await cache.close();
  // The load went on after the caller left, and published.
  const stored = String(await db.redis.send(["GET", cache.keys("old").data]));
  assert.ok(stored.endsWith('"old loaded"'), stored);
});

Soft.run();
