/**
 * Reliability findings about the strategies, each pinned by the condition
 * that exposed it, forced: a Redis made 200 ms away by the proxy (limit()
 * must not hold its slot through a publish), ill-formed strings (the string
 * codec must not serve another value than the one loaded), values over
 * `maxValueBytes` counted in UTF-8 bytes, and the first publication
 * rejected as late saying why.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect } from "../../resp/client.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { limit } from "../../strategies/limit.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import type { CacheEvent } from "../../strategies/events.ts";
import { startProxy } from "../support/proxy.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import { events, origin } from "../support/strategies.ts";
import { deferred, until } from "../support/wait.ts";
type LatePublish = Extract<CacheEvent, { type: "late-publish" }>;

const Reliability = suite("reliability: strategies");
const db = useRedis(Reliability, { prefix: "rel" });

Reliability(
  "limit() frees its slot when the origin settles: with Redis 200 ms away, a load queued behind an instant one is not shed",
  async () => {
    const proxy = await startProxy(db.server.port);
    const far = await connect({ url: proxy.url, resp: 3 });
    // 100 ms each way: the publish's round trip (200 ms) outlasts queueMs (100 ms).
    proxy.delay(100);
    const slots = limit({ concurrency: 1, queueMs: 100 });
    const cache = pipeline({ redis: far, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease(), slots);
    try {
      const hold = deferred();
      const first = origin(() => "a");
      first.hold = hold.promise;
      const a = cache.get("a", first.load);
      await first.called();
      const second = origin(() => "b");
      const b = cache.get("b", second.load);
      // b asks for the slot while a's origin call holds it...
      await until(() => slots.queued === 1);
      // ...which then answers at once. a's publication still has 200 ms of
      // Redis ahead of it; the origin is idle, so b must start now.
      hold.resolve();
      assert.equal(await Promise.all([a, b]), ["a", "b"]);
      assert.equal([first.calls, second.calls], [1, 1]);
      assert.equal([cache.stats().shed, cache.stats().loads], [0, 2]);
    } finally {
      await cache.close();
      far.destroy();
      await proxy.close();
    }
  },
);

Reliability("a load limit() sheds is not a load: no load-start, no load-end, counted in shed only", async () => {
  const ev = events();
  const slots = limit({ concurrency: 1 });
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns(), onEvent: ev.onEvent }, slots);
  try {
    const hold = deferred();
    const busy = origin(() => "a");
    busy.hold = hold.promise;
    const a = cache.get("a", busy.load);
    await busy.called();
    const never = origin(() => "b");
    await rejects(() => cache.get("b", never.load), Error, /no slot freed within queueMs \(0 ms\)$/);
    hold.resolve();
    assert.is(await a, "a");
    assert.is(never.calls, 0);
    assert.equal([ev.count("load-start"), ev.count("load-end"), ev.count("shed")], [1, 1, 1]);
    assert.equal([cache.stats().loads, cache.stats().loadErrors, cache.stats().shed], [1, 0, 1]);
  } finally {
    await cache.close();
  }
});

Reliability(
  "the string codec never serves another string than the one loaded: a lone surrogate (UTF-8 would store U+FFFD) is a TypeError",
  async () => {
    const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns(), codec: "string" });
    try {
      // Each value with the index of its first lone surrogate.
      const values: [string, number][] = [
        ["x\ud800", 1],
        ["\udc00", 0],
        ["😀".slice(0, 1), 0], // the first half of an emoji
        ["ab" + "🦀".slice(1), 2], // the second half of another
        ["😀\udc00\ud800", 2], // a pair, then a pair in the wrong order: two lone surrogates
      ];
      for (const [value, index] of values) {
        const key = cache.keys(value).data;
        await rejects(
          () => cache.get(value, () => value),
          TypeError,
          `Cannot cache ${key}: the string codec cannot encode the loaded value (a lone surrogate at index ${index} has no UTF-8 form)`,
        );
        assert.is(await db.redis.send(["EXISTS", key]), 0, `${JSON.stringify(value)} was stored`);
      }
      // Well-formed text round-trips exactly, astral characters included.
      const text = "x\ufffd 😀🦀 é";
      assert.is(await cache.get("ok", () => text), text);
      assert.is(await cache.get("ok", () => "reloaded"), text);
      assert.is(cache.stats().hits, 1);
    } finally {
      await cache.close();
    }
  },
);

Reliability("json keeps lone surrogates as escapes: each value comes back exactly as loaded", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() });
  try {
    for (const value of ["x\ud800", "x\ufffd", "\ud800", "\udc00", "😀".slice(0, 1), "🦀".slice(0, 1)]) {
      assert.is(await cache.get(["v", value], () => value), value);
      assert.is(await cache.get(["v", value], () => "reloaded"), value, `${JSON.stringify(value)} came back changed`);
    }
    assert.is(cache.stats().loads, 6);
  } finally {
    await cache.close();
  }
});

Reliability(
  "maxValueBytes counts UTF-8 bytes: a value over it is a RangeError naming the setting, and nothing is stored",
  async () => {
    await rejects(
      () => pipeline({ redis: db.redis, ttlMs: 1000, maxValueBytes: 0 }),
      RangeError,
      "Cannot create pipeline: 'maxValueBytes' must be a positive integer, got 0",
    );
    const cache = pipeline<string>({
      redis: db.redis,
      ttlMs: 60_000,
      namespace: db.ns(),
      codec: "string",
      maxValueBytes: 1000,
    });
    try {
      // 600 code units, 1,200 bytes as UTF-8: over the limit although .length is not.
      const accented = "é".repeat(600);
      const key = cache.keys("accented").data;
      await rejects(
        () => cache.get("accented", () => accented),
        RangeError,
        `Cannot cache ${key}: the encoded value is 1200 bytes, over maxValueBytes (1000)`,
      );
      assert.is(await db.redis.send(["EXISTS", key]), 0);
      assert.is(cache.stats().loadErrors, 1);
      // 1,000 bytes exactly is allowed, and stored.
      const edge = "é".repeat(500);
      assert.is(await cache.get("edge", () => edge), edge);
      assert.is(await cache.get("edge", () => "reloaded"), edge);
    } finally {
      await cache.close();
    }
  },
);

Reliability(
  "the first publication rejected as late emits late-publish with first: true and the reason; later ones first: false",
  async () => {
    const ev = events();
    const cache = pipeline(
      { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), onEvent: ev.onEvent },
      lease({ leaseMs: 100 }),
    );
    try {
      for (const id of ["one", "two"]) {
        const hold = deferred();
        const slow = origin(() => id);
        slow.hold = hold.promise;
        const call = cache.get(id, slow.load);
        await slow.called();
        // Real expiry: Redis drops the lease while the origin is still held.
        const lease = cache.keys(id).lease;
        await until(async () => (await db.redis.send(["EXISTS", lease])) === 0);
        hold.resolve();
        assert.is(await call, id, "nothing newer is stored: the caller gets its own value");
      }
      const late = ev.seen.filter((e): e is LatePublish => e.type === "late-publish");
      assert.equal(
        late.map((e) => [e.key, e.first]),
        [[cache.keys("one").data, true], [cache.keys("two").data, false]],
      );
      assert.is(
        late[0]!.reason,
        "its lease expired or was taken (leaseMs shorter than the load, or an invalidation or set() meanwhile)",
      );
      assert.is(cache.stats().lateRejected, 2);
    } finally {
      await cache.close();
    }
  },
);

Reliability.run();
