import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect } from "../../../../resp/client.ts";
import { coalesce } from "../../../../strategies/coalesce.ts";
import { lease } from "../../../../strategies/lease.ts";
import { pipeline } from "../../../../strategies/pipeline/pipeline.ts";
import { swr } from "../../../../strategies/swr.ts";
import { runWorkers } from "../../../support/processes.ts";
import { rejects } from "../../../support/assert.ts";
import { useRedis } from "../../../support/fixture.ts";
import { startRedis } from "../../../support/redis_server.ts";
import { counting, plant } from "../../../support/strategies.ts";
import { deferred, until } from "../../../support/wait.ts";

const Warm = suite("warm()");
const db = useRedis(Warm, { prefix: "warm", clients: 2 });

Warm("warm() loads what is missing or stale, leaves what is fresh, and counts unique identities", async () => {
  const cache = pipeline(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns() },
    swr({ staleMs: 60_000 }),
    coalesce(),
    lease(),
  );
  await cache.set("fresh", "kept");
  await plant(db.redis, cache, "stale", { payload: '"old"', freshMs: 1_000, staleMs: 60_000, ageMs: 2_000 });
  const loaded: string[] = [];
  const report = await cache.warm(["fresh", "stale", "missing", "missing", "fresh"], ({ identity }) => {
    loaded.push(String(identity));
    return `loaded ${String(identity)}`;
  });
  assert.equal(report, { loaded: 2, fresh: 1, failed: 0 });
  assert.equal(loaded.sort(), ["missing", "stale"]);
  assert.equal(await Promise.all(["fresh", "stale", "missing"].map((id) => cache.peek(id))), [
    "kept",
    "loaded stale",
    "loaded missing",
  ]);
  await cache.close();
});

Warm("warm() keeps going past a failure and reports it", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, lease());
  const report = await cache.warm(["a", "bad", "c"], ({ identity }) => {
    if (identity === "bad") throw new Error("origin refused");
    return String(identity);
  });
  assert.equal(report, { loaded: 2, fresh: 0, failed: 1 });
  assert.equal(await Promise.all(["a", "bad", "c"].map((id) => cache.peek(id))), ["a", undefined, "c"]);
  await cache.close();
});

Warm(
  "warm() against a dead Redis stops trying once an identity found it unreachable: of 100, at most 16 read, all counted failed",
  async () => {
    const server = await startRedis();
    const redis = await connect({ url: server.url, resp: 3, commandTimeoutMs: 200 });
    // Counts the reads sent: each would wait out commandTimeoutMs in the client's queue.
    const wire = counting(redis);
    const cache = pipeline(
      { redis: wire, ttlMs: 60_000, namespace: "dead", commandTimeoutMs: 200 },
      coalesce(),
      lease(),
    );
    try {
      assert.is(await cache.get("before", () => "v"), "v");
      await server.kill();
      const reads = wire.reads;
      let calls = 0;
      const ids = Array.from({ length: 100 }, (_, i) => `id${i}`);
      const report = await cache.warm(ids, () => ++calls, { concurrency: 4 });
      assert.equal(report, { loaded: 0, fresh: 0, failed: 100 });
      assert.is(calls, 0, "the origin was called for a dead Redis");
      // The first identities of the four workers, and what one of them had started before another failed.
      assert.ok(wire.reads - reads <= 2 * 4 * 2, `${wire.reads - reads} reads for 100 identities`);
    } finally {
      await cache.close({ timeoutMs: 1000 });
      redis.destroy();
      await server.stop();
    }
  },
);

Warm("warm() runs at most `concurrency` loads at once", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, lease());
  const total = 40;
  let inflight = 0;
  let peak = 0;
  let started = 0;
  let gate = deferred();
  // Each load is held until three run at once (or the last ones started):
  // a fourth could only start if warm() allowed more than three.
  const report = await cache.warm(
    Array.from({ length: total }, (_, i) => `k${i}`),
    async ({ identity }) => {
      started++;
      peak = Math.max(peak, ++inflight);
      const mine = gate.promise;
      if (inflight === 3 || started === total) {
        gate.resolve();
        gate = deferred();
      }
      await mine;
      inflight--;
      return String(identity);
    },
    { concurrency: 3 },
  );
  assert.equal(report, { loaded: total, fresh: 0, failed: 0 });
  assert.is(peak, 3);
  await cache.close();
});

Warm("an aborted warm() starts nothing more, waits for what runs, and rejects with the reason", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, lease());
  const controller = new AbortController();
  const hold = deferred();
  let started = 0;
  let finished = 0;
  const warming = cache.warm(
    Array.from({ length: 10 }, (_, i) => `k${i}`),
    async () => {
      started++;
      await hold.promise;
      finished++;
      return "v";
    },
    { concurrency: 2, signal: controller.signal },
  );
  await until(() => started === 2);
  controller.abort(new Error("shutting down"));
  hold.resolve();
  await rejects(() => warming, Error, "shutting down");
  assert.equal([started, finished], [2, 2]);
  await cache.close();
});

Warm("warm() validates its arguments", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() });
  await rejects(
    () => cache.warm(["a"], () => 1, { concurrency: 0 }),
    RangeError,
    "Cannot warm: 'concurrency' must be a positive integer, got 0",
  );
  await rejects(
    () => cache.warm("a" as never, () => 1),
    TypeError,
    "Cannot warm: 'identities' must be an array, got string",
  );
  await rejects(() => cache.warm(["a"], 1 as never), TypeError, "Cannot warm: 'loader' must be a function, got number");
  await cache.close();
});

Warm("4 OS processes warming the same 60 identities load each once, at most 3 at a time each", async () => {
  const namespace = db.ns();
  const ids = Array.from({ length: 60 }, (_, i) => `k${i}`);
  const outputs = await runWorkers(
    db.other,
    new URL("./_worker.ts", import.meta.url),
    namespace,
    [0, 1, 2, 3].map((i) => [db.server.url, namespace, String(i), "warm", ids.join(",")]),
  );
  const results = outputs.map((o) =>
    JSON.parse(o.trim()) as { result: { loaded: number; fresh: number; failed: number }; peak: number }
  );
  const counts = (await db.other.send(["HVALS", `${namespace}:origin`])) as string[];
  assert.is(counts.length, 60);
  assert.ok(counts.every((c) => c === "1"), `loads per identity: ${counts}`);
  assert.is(results.reduce((sum, r) => sum + r.result.loaded, 0), 60);
  for (const r of results) {
    assert.is(r.result.loaded + r.result.fresh + r.result.failed, 60);
    assert.is(r.result.failed, 0);
    assert.ok(r.peak <= 3, `peak ${r.peak}`);
  }
});

Warm.run();
