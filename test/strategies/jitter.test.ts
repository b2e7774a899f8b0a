import { suite } from "uvu";
import * as assert from "uvu/assert";
import { jitter } from "../../strategies/jitter.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { swr } from "../../strategies/swr.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";

const Jitter = suite("jitter()");
const db = useRedis(Jitter, { prefix: "jit" });

Jitter("jitter() rejects a bad spread, and a spread not below the TTL", async () => {
  await rejects(
    () => jitter({ spreadMs: 0 }),
    RangeError,
    "Cannot create jitter: 'spreadMs' must be a positive integer, got 0",
  );
  await rejects(
    () => jitter(undefined as never),
    RangeError,
    "Cannot create jitter: 'spreadMs' must be a positive integer, got undefined",
  );
  await rejects(
    () => jitter({ spreadMs: 2.5 }),
    RangeError,
    "Cannot create jitter: 'spreadMs' must be a positive integer, got 2.5",
  );
  await rejects(
    () => pipeline({ redis: db.redis, ttlMs: 1000 }, jitter({ spreadMs: 1000 })),
    RangeError,
    "Cannot use jitter: 'spreadMs' (1000) must be less than the TTL (1000)",
  );
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, jitter({ spreadMs: 600 }));
  let called = false;
  await rejects(
    () => cache.get("k", () => (called = true), { ttlMs: 500 }),
    RangeError,
    "Cannot use jitter: 'spreadMs' (600) must be less than the TTL (500)",
  );
  assert.is(called, false, "checked before any load");
  await cache.close();
});

async function pttlWith(
  random: number,
  ttlMs: number,
  spreadMs: number,
  ...extra: ReturnType<typeof swr>[]
): Promise<number> {
  const cache = pipeline(
    { redis: db.redis, ttlMs, namespace: db.ns(), random: () => random },
    jitter({ spreadMs }),
    ...extra,
  );
  await cache.get("k", () => "v");
  const pttl = Number(await db.redis.send(["PTTL", cache.keys("k").data]));
  await cache.close();
  return pttl;
}

Jitter("random() = 0 draws the low end of the window: ttl - spreadMs", async () => {
  const pttl = await pttlWith(0, 60_000, 30_000);
  assert.ok(pttl > 29_000 && pttl <= 30_000, `pttl ${pttl}`);
});

Jitter("random() close to 1 (and 1 itself) draws the high end of the window: ttl", async () => {
  for (const r of [0.999999, 1]) {
    const pttl = await pttlWith(r, 60_000, 30_000);
    assert.ok(pttl > 59_000 && pttl <= 60_000, `random ${r}: pttl ${pttl}`);
  }
});

Jitter("the jittered fresh window is drawn once per publish and the stale window is added after it", async () => {
  let draws = 0;
  const cache = pipeline(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), random: () => (draws++, 0) },
    jitter({ spreadMs: 30_000 }),
    swr({ staleMs: 10_000 }),
  );
  // pipeline() drew once to check the source.
  draws = 0;
  await cache.get("a", () => "v");
  await cache.get("a", () => "v");
  await cache.get("b", () => "v");
  assert.is(draws, 2, "one draw per publish, none per read");
  const pttl = Number(await db.redis.send(["PTTL", cache.keys("a").data]));
  assert.ok(pttl > 39_000 && pttl <= 40_000, `pttl ${pttl}`);
  await cache.close();
});

Jitter.run();
