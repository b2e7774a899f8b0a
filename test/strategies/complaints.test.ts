/**
 * Two complaints users filed against other caches, as tests we must keep
 * passing: an early refresh that calls the origin although Redis already
 * holds a fresher value another process published
 * (https://github.com/ZiggyCreatures/FusionCache/issues/651,
 * https://github.com/ZiggyCreatures/FusionCache/issues/604), and a tag
 * invalidation that stale serving undoes
 * (https://github.com/Julien-R44/bentocache/issues/71).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Arg, RedisLike, SendOptions } from "../../resp/mod.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { swr } from "../../strategies/swr.ts";
import { xfetch } from "../../strategies/xfetch.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import { events, origin, plant } from "../support/strategies.ts";
import { deferred } from "../support/wait.ts";

const Complaints = suite("complaints");
const db = useRedis(Complaints, { prefix: "complaint", clients: 2 });

/** A real connection whose commands wait while `hold` is set: no command reaches Redis before it is released. */
function held(redis: RedisLike) {
  const gate = { hold: undefined as Promise<void> | undefined };
  const wrapped: RedisLike = {
    send(args: readonly Arg[], options?: SendOptions) {
      const hold = gate.hold;
      return hold === undefined ? redis.send(args, options) : hold.then(() => redis.send(args, options));
    },
  };
  return { gate, redis: wrapped };
}

Complaints(
  "an early refresh whose lease re-check finds a value another process published after its judgement calls no origin",
  async () => {
    const ns = db.ns();
    const a = held(db.redis);
    const published = deferred<void>();
    let judged = false;
    const cacheA = pipeline<string>(
      {
        redis: a.redis,
        ttlMs: 60_000,
        namespace: ns,
        // Always due: -loadMs * ln(1 - 0.999999) is far above any fresh time left.
        random: () => 0.999999,
        onEvent(event) {
          // A judged the entry due: from here until B published, none of A's commands reaches Redis.
          if (event.type === "early-refresh" && !judged) {
            judged = true;
            a.gate.hold = published.promise;
          }
        },
      },
      xfetch(),
      lease(),
    );
    const cacheB = pipeline<string>({ redis: db.other, ttlMs: 60_000, namespace: ns }, lease());
    await plant(db.redis, cacheA, "k", { payload: '"v1"', freshMs: 60_000, loadMs: 60_000 });
    const o = origin(() => "A's load");
    assert.is(await cacheA.get("k", o.load), "v1");
    assert.ok(judged);
    // Process B publishes a fresher value while A's refresh is on its way to the lease.
    await cacheB.set("k", "v2 from B");
    a.gate.hold = undefined;
    published.resolve();
    await cacheA.close(); // waits for the background refresh
    assert.is(o.calls, 0, "A called the origin although Redis held B's newer value");
    assert.equal([cacheA.stats().loads, cacheA.stats().leasesWon], [0, 1]);
    const check = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: ns });
    assert.is(await check.get("k", () => "unused"), "v2 from B");
    await Promise.all([cacheB.close(), check.close()]);
  },
);

Complaints("after invalidateTags, swr never serves the invalidated value from its stale window", async () => {
  const log = events();
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), onEvent: log.onEvent },
    swr({ staleMs: 600_000, ifErrorMs: 600_000 }),
    lease(),
  );
  await plant(db.redis, cache, "k", {
    payload: '"before"',
    freshMs: 1_000,
    staleMs: 600_000,
    ifErrorMs: 600_000,
    ageMs: 2_000,
    tags: ["product:1"],
  });
  await cache.invalidateTags(["product:1"]);
  assert.is(await cache.peek("k"), undefined);
  assert.is(await cache.get("k", () => "after", { tags: ["product:1"] }), "after");
  assert.equal([cache.stats().stale, cache.stats().loads], [0, 1]);
  await cache.close();
});

Complaints("after invalidateTags, stale-if-error and a soft timeout never serve the invalidated value", async () => {
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns() },
    swr({ staleMs: 0, ifErrorMs: 600_000, softTimeoutMs: 1 }),
    lease(),
  );
  await plant(db.redis, cache, "k", {
    payload: '"before"',
    freshMs: 1_000,
    ifErrorMs: 600_000,
    ageMs: 2_000,
    tags: ["product:1"],
  });
  await cache.invalidateTags(["product:1"]);
  // A failing origin: the invalidated value is no fallback.
  await rejects(
    () =>
      cache.get("k", () => {
        throw new Error("origin down");
      }),
    Error,
    "origin down",
  );
  // A slow origin: the soft timeout has no old value to serve, the caller waits for the load.
  const gate = deferred<void>();
  const o = origin(() => "after");
  o.hold = gate.promise;
  const call = cache.get("k", o.load);
  await o.called(1);
  gate.resolve();
  assert.is(await call, "after");
  const stats = cache.stats();
  assert.equal([stats.stale, stats.softTimeouts, stats.loadErrors], [0, 0, 1]);
  await cache.close();
});

Complaints.run();
