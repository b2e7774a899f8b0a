import { suite } from "uvu";
import * as assert from "uvu/assert";
import { coalesce } from "../../../strategies/coalesce.ts";
import { lease } from "../../../strategies/lease.ts";
import { near } from "../../../strategies/near.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import { TimeoutError } from "../../../resp/errors.ts";
import { rejects } from "../../support/assert.ts";
import { useRedis } from "../../support/fixture.ts";
import type { RedisClient } from "../../../resp/client.ts";
import type { Arg, RedisLike, Reply } from "../../../resp/types.ts";
import type { Strategy } from "../../../strategies/contract.ts";
import { deferred, until } from "../../support/wait.ts";

const Hot = suite("the hit path as users write it");
const db = useRedis(Hot, { prefix: "hot", clients: 1 });

/**
 * Count the AbortControllers built while `run` runs: a call's timer is set
 * only right after its controller is built, so none built means none set.
 */
async function controllersBuilt(run: () => Promise<void>): Promise<number> {
  const Original = globalThis.AbortController;
  let built = 0;
  globalThis.AbortController = class extends Original {
    constructor() {
      super();
      built++;
    }
  };
  try {
    await run();
  } finally {
    globalThis.AbortController = Original;
  }
  return built;
}

Hot("a near hit with per-call { timeoutMs } builds no AbortController and sets no timer", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, near(), coalesce(), lease());
  const options = { timeoutMs: 2_000 };
  await cache.get(["product", 1], () => ({ id: 1 }), options); // loaded
  await cache.get(["product", 1], () => ({ id: 1 }), options); // read, kept near
  const hitsBefore = cache.stats().nearHits;
  const built = await controllersBuilt(async () => {
    for (let i = 0; i < 50; i++) {
      assert.equal(await cache.get(["product", 1], () => ({ id: -1 }), { timeoutMs: 2_000, ttlMs: 60_000 }), { id: 1 });
    }
  });
  assert.is(cache.stats().nearHits - hitsBefore, 50, "near hits");
  assert.is(built, 0, "AbortControllers built by near hits");
  await cache.close();
});

Hot(
  "a remote hit with per-call { timeoutMs } builds none either; a miss does, and its deadline still holds",
  async () => {
    const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
    await cache.get(["product", 2], () => ({ id: 2 }), { timeoutMs: 2_000 });
    const built = await controllersBuilt(async () => {
      for (let i = 0; i < 20; i++) {
        assert.equal(await cache.get(["product", 2], () => ({ id: -1 }), { timeoutMs: 2_000 }), { id: 2 });
      }
    });
    assert.is(built, 0, "AbortControllers built by remote hits");
    // A miss waits for its load: the signal the loader gets is the call's, and the timeout aborts it.
    const aborted = deferred<unknown>();
    const missBuilt = await controllersBuilt(async () => {
      await rejects(
        () =>
          cache.get(["product", 3], ({ signal }) =>
            new Promise((_, reject) => {
              signal.addEventListener("abort", () => {
                aborted.resolve(signal.reason);
                reject(signal.reason);
              });
            }), { timeoutMs: 1_000 }),
        TimeoutError,
        `The get of ${cache.keys(["product", 3]).data} timed out: 'timeoutMs' of 1000 ms ran out`,
      );
    });
    assert.ok(missBuilt >= 1, "a miss builds its signal");
    assert.instance(await aborted.promise, TimeoutError);
    await cache.close();
  },
);

/** Calls of GET the server counted so far (`INFO commandstats`). */
async function getCalls(admin: RedisClient): Promise<number> {
  const info = String(await admin.send(["INFO", "commandstats"]));
  return Number(/cmdstat_get:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

/** GETs the server saw while 100 gets of one identity ran, all started in one tick. */
async function burst(
  admin: RedisClient,
  cache: { get(id: string, load: () => unknown): Promise<unknown> },
  id: string,
) {
  const before = await getCalls(admin);
  const values = await Promise.all(Array.from({ length: 100 }, () => cache.get(id, () => "loaded")));
  assert.ok(values.every((v) => v === "stored"), "every get served the stored value");
  return (await getCalls(admin)) - before;
}

for (const resp of [3, 2] as const) {
  for (
    const [name, layers] of [["no strategy", () => []], ["coalesce(), lease()", () => [coalesce(), lease()]], [
      "near(), coalesce()",
      () => [near(), coalesce()],
    ]] as [string, () => Strategy[]][]
  ) {
    if (resp === 2 && name.startsWith("near")) continue;
    Hot(
      `RESP${resp}, ${name}: 100 concurrent gets of one identity send one GET (and the epoch's where it is read)`,
      async () => {
        const admin = await db.client();
        const redis = await db.client({ resp });
        const namespace = db.ns();
        const writer = pipeline({ redis: admin, ttlMs: 60_000, namespace });
        await writer.set("hot", "stored");
        await writer.set("warm", "stored");
        await writer.set("cold", "stored");
        const cache = pipeline({ redis, ttlMs: 60_000, namespace }, ...layers());
        // Cold: the clock, tracking and the epoch are not known yet; the data GET is still one.
        const cold = await burst(admin, cache, "cold");
        assert.is(cold, 2, "a cold burst: the data GET and the epoch's");
        await cache.get("warm", () => "loaded");
        // Warm: with tracking (RESP3) the epoch is known; without it (RESP2) it rides along each read.
        assert.is(await burst(admin, cache, "hot"), resp === 3 ? 1 : 2);
        await cache.close();
        await writer.close();
      },
    );
  }
}

Hot("a read in flight stays joinable while the in-flight map sweeps the slots of ended reads", async () => {
  const admin = await db.client();
  const redis = await db.client({ resp: 3 });
  const namespace = db.ns();
  const writer = pipeline({ redis: admin, ttlMs: 60_000, namespace });
  await writer.set("hot", "stored");
  const cache = pipeline({ redis, ttlMs: 60_000, namespace }, coalesce(), lease());
  await cache.get("hot", () => "loaded"); // tracking on, clock and epoch known: one GET per read
  // 1,100 reads that end: past the map's sweep point (1,024 keys) at least once.
  for (let i = 0; i < 1_100; i++) assert.is(await cache.peek(`ended:${i}`), undefined);
  const before = await getCalls(admin);
  // In one tick: a read of "hot", then 1,100 more keys (a sweep while it is in flight), then 99 gets of "hot".
  const first = cache.get("hot", () => "loaded");
  const others = Array.from({ length: 1_100 }, (_, i) => cache.peek(`live:${i}`));
  const joiners = Array.from({ length: 99 }, () => cache.get("hot", () => "loaded"));
  assert.equal(await Promise.all([first, ...joiners]), Array(100).fill("stored"));
  await Promise.all(others);
  assert.is((await getCalls(admin)) - before, 1_101, "one GET per key: the 99 joined the read in flight");
  await cache.close();
  await writer.close();
});

/**
 * A client whose replies to `GET <key>` wait for `release()` while `holding`:
 * a read held in flight, its bytes from the real server. Counts those GETs.
 */
function holdingGets(redis: RedisClient, key: string) {
  let gate = deferred();
  const state = { holding: false, sent: 0 };
  const client: RedisLike = {
    send(command: readonly Arg[], options?: never): Promise<Reply> {
      const reply = redis.send(command, options);
      if (command[0] !== "GET" || command[1] !== key) return reply;
      state.sent++;
      if (!state.holding) return reply;
      const held = gate.promise;
      return reply.then((r: Reply) => held.then(() => r));
    },
  } as RedisLike;
  const release = () => {
    state.holding = false;
    gate.resolve();
    gate = deferred();
  };
  return { client, state, release };
}

Hot("a get that starts after this process' set() or invalidate() resolved never joins an older read", async () => {
  const redis = await db.client({ resp: 2 });
  const namespace = db.ns();
  const probe = pipeline({ redis, ttlMs: 60_000, namespace });
  const key = probe.keys("k").data;
  const held = holdingGets(redis, key);
  const cache = pipeline({ redis: held.client, ttlMs: 60_000, namespace }, coalesce());
  await cache.set("k", "v1");
  assert.is(await cache.get("k", () => "loaded"), "v1");
  held.state.holding = true;
  const sent = held.state.sent;
  const a = cache.get("k", () => "loaded");
  const b = cache.get("k", () => "loaded");
  // b joined a's read: one GET is in flight, held.
  await until(() => held.state.sent === sent + 1);
  await cache.set("k", "v2");
  const c = cache.get("k", () => "loaded");
  await until(() => held.state.sent === sent + 2);
  held.release();
  assert.equal(await Promise.all([a, b, c]), ["v1", "v1", "v2"]);
  assert.is(held.state.sent, sent + 2, "a and b shared a read; c read anew");
  // The same after invalidate(): the value is gone, so the next get loads.
  held.state.holding = true;
  const d = cache.get("k", () => "loaded");
  await until(() => held.state.sent === sent + 3);
  await cache.invalidate("k");
  const e = cache.get("k", () => "reloaded");
  await until(() => held.state.sent === sent + 4);
  held.release();
  assert.equal(await Promise.all([d, e]), ["v2", "reloaded"]);
  await cache.close();
  await probe.close();
});

Hot.run();
