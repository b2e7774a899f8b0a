/**
 * Every options object of the cache layer refuses a key it does not know,
 * naming it and, when one is close, the key that was meant: a misspelled
 * `nameSpace` must not put the data in the shared default namespace. And
 * what is injected (a signal, a clock, a random source) is checked where it
 * is given, naming the setting.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { compressed } from "../../strategies/codec/compressed.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { jitter } from "../../strategies/jitter.ts";
import { lease } from "../../strategies/lease.ts";
import { limit } from "../../strategies/limit.ts";
import { near } from "../../strategies/near.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { cacheStatus } from "../../strategies/pipeline/report/cache_status.ts";
import { prometheus } from "../../strategies/pipeline/report/prometheus.ts";
import { swr } from "../../strategies/swr.ts";
import { xfetch } from "../../strategies/xfetch.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";

const Unknown = suite("unknown options of the cache layer");
const db = useRedis(Unknown, { prefix: "unk" });

// deno-lint-ignore no-explicit-any
const loose = (o: object) => o as any;

Unknown("pipeline() and each strategy refuse a key they do not know, naming the close one", async () => {
  const cases: [() => unknown, string][] = [
    [
      () => pipeline(loose({ redis: db.redis, ttlMs: 1000, nameSpace: "users" })),
      "Unknown option 'nameSpace' for pipeline(); did you mean 'namespace'?",
    ],
    [
      () => pipeline(loose({ redis: db.redis, tllMs: 1000 })),
      "Unknown option 'tllMs' for pipeline(); did you mean 'ttlMs'?",
    ],
    [() => lease(loose({ leaseTime: 500 })), "Unknown option 'leaseTime' for lease(); did you mean 'leaseMs'?"],
    [
      () => swr(loose({ staleMs: 1, maxRefresh: 3 })),
      "Unknown option 'maxRefresh' for swr(); did you mean 'maxRefreshes'?",
    ],
    [() => xfetch(loose({ betta: 2 })), "Unknown option 'betta' for xfetch(); did you mean 'beta'?"],
    [() => jitter(loose({ spread: 5 })), "Unknown option 'spread' for jitter(); did you mean 'spreadMs'?"],
    [() => lease(loose({ waitTime: 5 })), "Unknown option 'waitTime' for lease(); did you mean 'waitMs'?"],
    [() => lease(loose({ onEvent: () => {} })), "Unknown option 'onEvent' for lease()"],
    [
      () => limit(loose({ concurrency: 2, queueMS: 5 })),
      "Unknown option 'queueMS' for limit(); did you mean 'queueMs'?",
    ],
    [() => near(loose({ maxEntry: 5 })), "Unknown option 'maxEntry' for near(); did you mean 'maxEntries'?"],
    [
      () => compressed("json", loose({ minbytes: 5 })),
      "Unknown option 'minbytes' for compressed(); did you mean 'minBytes'?",
    ],
    [
      () =>
        cacheStatus(
          loose({ value: 1, source: "near", stale: false, ageMs: 0, freshForMs: 1, stored: false }),
          loose({ nam: "x" }),
        ),
      "Unknown option 'nam' for cacheStatus(); did you mean 'name'?",
    ],
    [
      () => prometheus(loose({ stats: () => ({}) }), loose({ prefx: "a" })),
      "Unknown option 'prefx' for prometheus(); did you mean 'prefix'?",
    ],
  ];
  for (const [make, message] of cases) await rejects(make, TypeError, message);
});

Unknown("each method's options refuse a key they do not know, before anything is read or written", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, coalesce());
  let calls = 0;
  const load = () => `v${++calls}`;
  await rejects(
    () => cache.get("k", load, loose({ timeOutMs: 50 })),
    TypeError,
    "Unknown option 'timeOutMs' for get(); did you mean 'timeoutMs'?",
  );
  await rejects(
    () => cache.getEntry("k", load, loose({ tag: ["a"] })),
    TypeError,
    "Unknown option 'tag' for getEntry(); did you mean 'tags'?",
  );
  await rejects(
    () => cache.getMany(["k"], (m) => Promise.resolve(m.map(load)), loose({ ttl: 5 })),
    TypeError,
    "Unknown option 'ttl' for getMany(); did you mean 'ttlMs'?",
  );
  await rejects(
    () => cache.set("k", "v", loose({ ttlMS: 5 })),
    TypeError,
    "Unknown option 'ttlMS' for set(); did you mean 'ttlMs'?",
  );
  // set() takes no deadline of its own: a timeoutMs there is a mistake, not a wish granted.
  await rejects(() => cache.set("k", "v", loose({ timeoutMs: 5 })), TypeError, "Unknown option 'timeoutMs' for set()");
  await rejects(
    () => cache.warm(["k"], load, loose({ concurency: 2 })),
    TypeError,
    "Unknown option 'concurency' for warm(); did you mean 'concurrency'?",
  );
  await rejects(
    () => cache.close(loose({ timeout: 5 })),
    TypeError,
    "Unknown option 'timeout' for close(); did you mean 'timeoutMs'?",
  );
  assert.is(calls, 0, "a loader ran");
  assert.is(await db.redis.send(["EXISTS", cache.keys("k").data]), 0, "something was written");
  await cache.close();
});

Unknown("a signal, a clock and a random source are checked where they are given, naming the setting", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 1000, namespace: db.ns() });
  await rejects(
    () => cache.get("k", () => "v", loose({ signal: {} })),
    TypeError,
    "Cannot get: 'signal' must be an AbortSignal, got an object",
  );
  await rejects(
    () => cache.warm(["k"], () => "v", loose({ signal: "stop" })),
    TypeError,
    `Cannot warm: 'signal' must be an AbortSignal, got "stop"`,
  );
  await cache.close();
  await rejects(
    () => pipeline({ redis: db.redis, ttlMs: 1000, now: () => NaN }),
    TypeError,
    "Cannot create pipeline: 'now' must return a finite number of ms, got NaN",
  );
  await rejects(
    () => pipeline({ redis: db.redis, ttlMs: 1000, random: () => 7 }),
    RangeError,
    "Cannot create pipeline: 'random' must return a number in [0, 1], got 7",
  );
  // A source good at first and bad later: jitter() checks each draw it takes.
  let draws = 0;
  const jittered = pipeline<string>(
    { redis: db.redis, ttlMs: 1000, namespace: db.ns(), random: () => (draws++ === 0 ? 0.5 : 7) },
    jitter({ spreadMs: 100 }),
  );
  await rejects(
    () => jittered.get("k", () => "v"),
    RangeError,
    "Cannot use jitter: the pipeline's 'random' must return a number in [0, 1], got 7",
  );
  await jittered.close();
});

Unknown.run();
