/**
 * The strategies of a pipeline compose by what they do: a strategy given
 * twice, or a factory given uncalled, is refused with the fix in the
 * message, and the order given changes nothing for the built-in ones.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { coalesce } from "../../../strategies/coalesce.ts";
import type { Strategy } from "../../../strategies/contract.ts";
import { jitter } from "../../../strategies/jitter.ts";
import { lease } from "../../../strategies/lease.ts";
import { limit } from "../../../strategies/limit.ts";
import { near } from "../../../strategies/near.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import { swr } from "../../../strategies/swr.ts";
import { xfetch } from "../../../strategies/xfetch.ts";
import { rejects } from "../../support/assert.ts";
import { useRedis } from "../../support/fixture.ts";
import { events, origin } from "../../support/strategies.ts";
import { barrier } from "../../support/wait.ts";

const Composition = suite("strategies composed by what they do");
const db = useRedis(Composition, { prefix: "comp" });

Composition("a factory given uncalled is refused, naming the call to write", async () => {
  await rejects(
    // deno-lint-ignore no-explicit-any
    () => pipeline({ redis: db.redis, ttlMs: 1000 }, coalesce(), lease as any),
    TypeError,
    "Cannot create pipeline: strategy 2 is a function, not a strategy: did you mean lease()?",
  );
  await rejects(
    // deno-lint-ignore no-explicit-any
    () => pipeline({ redis: db.redis, ttlMs: 1000 }, (() => {}) as any),
    TypeError,
    "Cannot create pipeline: strategy 1 is a function, not a strategy",
  );
  // @ts-expect-error A factory is not a Strategy: the type says so before the run does.
  const typed: Strategy = lease;
  assert.type(typed, "function");
});

Composition("a strategy given twice is refused, whatever its options", async () => {
  await rejects(
    () => pipeline({ redis: db.redis, ttlMs: 1000 }, lease(), coalesce(), lease({ leaseMs: 500 })),
    TypeError,
    "Cannot create pipeline: lease() is given twice (strategies 1 and 3); give each strategy once",
  );
});

Composition("a custom strategy's stage must be one the chain knows", async () => {
  const odd = { name: "odd", stage: "sometime" as never, fill: (next: never) => next };
  await rejects(
    () => pipeline({ redis: db.redis, ttlMs: 1000 }, odd),
    TypeError,
    `Cannot create pipeline: odd()'s stage must be one of "caller", "process", "redis", "owner", got "sometime"`,
  );
});

// 50 callers of one key in one process behind a barrier: with coalesce()
// outside the lease they share one load and one lease; the order given to
// pipeline() must not turn 49 of them into lease waiters.
for (const order of ["coalesce(), lease()", "lease(), coalesce()"] as const) {
  Composition(`50 concurrent gets in one process, ${order}: one load, 49 coalesced, no lease wait`, async () => {
    const ev = events();
    const strategies = order === "coalesce(), lease()" ? [coalesce(), lease()] : [lease(), coalesce()];
    const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns(), onEvent: ev.onEvent }, ...strategies);
    const o = origin(() => "v");
    const gate = barrier(50);
    const values = await Promise.all(Array.from({ length: 50 }, async () => {
      await gate.arrive();
      return cache.get("hot", o.load);
    }));
    assert.equal(new Set(values), new Set(["v"]));
    assert.is(o.calls, 1, "origin calls");
    const stats = cache.stats();
    assert.equal([stats.coalesced, stats.waits, stats.leasesWon], [49, 0, 1]);
    await cache.close();
  });
}

Composition("every order of the seven built-in strategies gives the same cache", async () => {
  const all = () => [
    near(),
    swr({ staleMs: 1000 }),
    xfetch(),
    coalesce(),
    lease(),
    limit({ concurrency: 4 }),
    jitter({ spreadMs: 10 }),
  ];
  const orders = [[0, 1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1, 0], [4, 6, 0, 5, 3, 1, 2]];
  for (const order of orders) {
    const given = all();
    const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, ...order.map((i) => given[i]!));
    const o = origin(() => order.join(""));
    const gate = barrier(20);
    await Promise.all(Array.from({ length: 20 }, async () => {
      await gate.arrive();
      return cache.get("k", o.load);
    }));
    assert.is(o.calls, 1, `origin calls in order ${order}`);
    assert.equal([cache.stats().coalesced, cache.stats().waits], [19, 0], `order ${order}`);
    await cache.close();
  }
});

Composition.run();
