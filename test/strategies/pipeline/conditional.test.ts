/**
 * Conditional refresh: `ctx.previous`, `ctx.setEtag()` and
 * `ctx.notModified()`. A republication keeps the stored payload (a header
 * alone is sent, checked against the previous publication's id), gets a new
 * id and a fresh window, and is counted, reported by getEntry and
 * Cache-Status. When the key no longer holds the previous entry it is
 * re-sent (empty key) or yields to the newer one (another publication).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { RedisClient } from "../../../resp/client.ts";
import { compressed } from "../../../strategies/codec/mod.ts";
import { coalesce } from "../../../strategies/coalesce.ts";
import { lease } from "../../../strategies/lease.ts";
import { cacheStatus } from "../../../strategies/pipeline/report/cache_status.ts";
import { decodeEnvelope } from "../../../strategies/pipeline/read/envelope.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import { swr } from "../../../strategies/swr.ts";
import type { Strategy } from "../../../strategies/contract.ts";
import type { LoaderContext, PreviousValue } from "../../../strategies/types.ts";
import { rejects } from "../../support/assert.ts";
import { useRedis } from "../../support/fixture.ts";
import { events, heldNotModified } from "../../support/strategies.ts";

const Conditional = suite("conditional refresh");
const db = useRedis(Conditional, { prefix: "cond", clients: 2 });

const envelope = async (key: string) => decodeEnvelope(String(await db.redis.send(["GET", key])));

/** A json codec that counts its encodes: a republication must not encode. */
function counting() {
  const c = {
    encodes: 0,
    codec: {
      name: "json",
      encode(value: unknown) {
        c.encodes++;
        return JSON.stringify(value);
      },
      decode: (payload: Uint8Array) => JSON.parse(new TextDecoder().decode(payload)),
    },
  };
  return c;
}

// swr's error window keeps an expire()d entry as a fallback: the next get
// loads in the foreground with it as ctx.previous.
const windows = () => swr({ staleMs: 0, ifErrorMs: 60_000 });

for (const resp of [3, 2] as const) {
  Conditional(
    `notModified() republishes the previous value with a fresh window and a new id, neither encoded nor sent (RESP${resp})`,
    async () => {
      const redis = resp === 3 ? db.redis : await db.client({ resp: 2 });
      const namespace = db.ns();
      const count = counting();
      const cache = pipeline<{ n: number }>(
        { redis, ttlMs: 60_000, namespace, codec: count.codec },
        windows(),
        coalesce(),
        lease(),
      );
      const first = await cache.get("k", (ctx) => {
        assert.is(ctx.previous, undefined);
        ctx.setEtag('"v1"');
        return { n: 1 };
      });
      assert.equal(first, { n: 1 });
      const key = cache.keys("k").data;
      const before = await envelope(key);
      assert.is(before.etag, '"v1"');
      await cache.expire("k");
      const encodes = count.encodes;
      let seen: PreviousValue<{ n: number }> | undefined;
      const result = await cache.getEntry("k", (ctx) => {
        seen = ctx.previous;
        return ctx.notModified();
      });
      assert.equal(seen, { value: { n: 1 }, etag: '"v1"', publishedAt: before.publishedAt });
      assert.equal([result.value, result.source, result.stored, result.notModified], [{ n: 1 }, "origin", true, true]);
      assert.ok(result.freshForMs > 59_000, `freshForMs ${result.freshForMs}`);
      assert.is(cacheStatus(result), "herdless; fwd=stale; fwd-status=304; stored");
      const after = await envelope(key);
      assert.is.not(after.id, before.id, "a republication is another publication");
      assert.equal([after.etag, after.payload, after.freshMs > 0], ['"v1"', before.payload, true]);
      assert.ok(after.publishedAt >= before.publishedAt);
      assert.ok(Number(await db.redis.send(["PTTL", key])) > 59_000, "the key lives its new windows");
      assert.is(count.encodes, encodes, "the value was not encoded again");
      assert.equal([cache.stats().notModified, cache.stats().loads], [1, 2]);
      // Another client reads the republished entry as fresh: a hit, no load.
      const other = pipeline<{ n: number }>(
        { redis: db.other, ttlMs: 60_000, namespace, codec: count.codec },
        windows(),
      );
      const hit = await other.getEntry("k", () => ({ n: 99 }));
      assert.equal([hit.value, hit.source, hit.stale], [{ n: 1 }, "redis", false]);
      assert.is(other.stats().loads, 0);
      await other.close();
      await cache.close();
    },
  );
}

Conditional("notModified() and skip() together: skip() wins, nothing is republished or counted", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, windows(), lease());
  await cache.get("k", () => "v1");
  const key = cache.keys("k").data;
  const before = await envelope(key);
  await cache.expire("k");
  const result = await cache.getEntry("k", (ctx) => {
    ctx.skip();
    return ctx.notModified();
  });
  assert.equal([result.value, result.stored, result.notModified], ["v1", false, false]);
  assert.is(cache.stats().notModified, 0);
  const after = await envelope(key);
  assert.equal([after.id, after.freshMs], [before.id, 0], "the expired entry is left as it was, not republished");
  await cache.close();
});

Conditional("setEtag() validates its etag, and a new etag replaces the previous one on a republication", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, windows(), lease());
  const errors: unknown[] = [];
  let kept: LoaderContext<string> | undefined;
  await cache.get("k", (ctx) => {
    kept = ctx;
    for (const bad of ["", 7, "x".repeat(257)]) {
      try {
        ctx.setEtag(bad as string);
      } catch (error) {
        errors.push(error);
      }
    }
    try {
      ctx.notModified();
    } catch (error) {
      errors.push(error);
    }
    ctx.setEtag('W/"a;b,c%"');
    return "v";
  });
  assert.instance(errors[0], TypeError);
  assert.is((errors[0] as Error).message, `Cannot setEtag: 'etag' must be a non-empty string, got ""`);
  assert.is((errors[1] as Error).message, "Cannot setEtag: 'etag' must be a non-empty string, got number");
  assert.instance(errors[2], RangeError);
  assert.is(
    (errors[2] as Error).message,
    "Cannot setEtag: 'etag' is 257 characters, over the longest an entry carries (256)",
  );
  assert.instance(errors[3], TypeError);
  assert.is((errors[3] as Error).message, "Cannot notModified: there is no previous value (ctx.previous is undefined)");
  for (const late of [() => kept!.setEtag("x"), () => kept!.notModified()]) {
    await rejects(late, TypeError, /^Cannot (setEtag|notModified): the load is over/);
  }
  const key = cache.keys("k").data;
  assert.is((await envelope(key)).etag, 'W/"a;b,c%"', "any characters, stored percent-encoded");
  await cache.expire("k");
  await cache.get("k", (ctx) => {
    assert.is(ctx.previous?.etag, 'W/"a;b,c%"');
    ctx.setEtag('"b"');
    return ctx.notModified();
  });
  assert.equal([(await envelope(key)).etag, (await envelope(key)).payload], ['"b"', '"v"']);
  await cache.close();
});

Conditional("a loader that calls notModified() but returns another value publishes that value", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, windows(), lease());
  await cache.set("k", "old");
  await cache.expire("k");
  assert.is(
    await cache.get("k", (ctx) => {
      ctx.notModified();
      return "new";
    }),
    "new",
  );
  assert.is((await envelope(cache.keys("k").data)).payload, '"new"');
  assert.is(cache.stats().notModified, 0);
  await cache.close();
});

Conditional("an entry gone while the load ran is served, not stored: its versions are not known here", async () => {
  const count = counting();
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), codec: count.codec },
    windows(),
    lease(),
  );
  await cache.set("k", "v", { tags: ["t"] });
  await cache.expire("k");
  const key = cache.keys("k").data;
  const republish = heldNotModified();
  const got = cache.getEntry("k", republish.load);
  await republish.called;
  // Evicted or expired meanwhile; the lease still holds.
  await db.redis.send(["DEL", key]);
  const encodes = count.encodes;
  republish.release();
  const result = await got;
  assert.equal([result.value, result.stored, result.notModified], ["v", false, true]);
  assert.is(count.encodes, encodes, "nothing encoded");
  assert.is(await db.redis.send(["EXISTS", key]), 0);
  assert.is(await db.redis.send(["EXISTS", cache.keys("k").lease]), 0, "the lease released");
  await cache.close();
});

Conditional(
  "a republication keeps the stored tags and epoch: an invalidation since the read leaves it a miss",
  async () => {
    let between: (() => Promise<void>) | undefined;
    const hook: Strategy = {
      name: "between",
      stage: "owner",
      fill: (next) =>
        async function betweenReadAndLoad(req) {
          await between?.();
          return await next({ ...req });
        },
    };
    const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, windows(), lease(), hook);
    await cache.get("k", (ctx) => {
      ctx.setTags(["author:1"]);
      return "v";
    });
    await cache.expire("k");
    // A plain get (no tags of its own) republishes: the entry keeps author:1.
    assert.is(await cache.get("k", (ctx) => ctx.notModified()), "v");
    const key = cache.keys("k").data;
    assert.equal((await envelope(key)).tags, ["author:1"]);
    await cache.invalidateTags(["author:1"]);
    assert.is(await cache.peek("k"), undefined, "still invalidated by its tag");
    // A clear() after the previous entry was read, before the load began (an
    // owner-stage hook runs it there): the load's own stamp is the new epoch,
    // but the republication keeps the entry's, so the value clear() dropped
    // is not revived.
    await cache.set("k", "w");
    await cache.expire("k");
    between = () => cache.clear();
    const r = await cache.getEntry("k", (ctx) => {
      assert.is(ctx.previous?.value, "w");
      return ctx.notModified();
    });
    between = undefined;
    assert.equal([r.value, r.notModified, r.stored], ["w", true, true]);
    assert.is(await cache.peek("k"), undefined, "the value clear() dropped is not revived");
    assert.is(await cache.get("k", () => "after-clear"), "after-clear");
    await cache.close();
  },
);

Conditional("an invalidate() during the load under lease() refuses the republication", async () => {
  const ev = events();
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), onEvent: ev.onEvent },
    windows(),
    lease(),
  );
  await cache.set("k", "v");
  await cache.expire("k");
  const republish = heldNotModified();
  const got = cache.get("k", republish.load);
  await republish.called;
  await cache.invalidate("k");
  republish.release();
  assert.is(await got, "v");
  assert.is(await db.redis.send(["EXISTS", cache.keys("k").data]), 0, "nothing republished over the invalidation");
  assert.is(ev.count("late-publish"), 1);
  await cache.close();
});

Conditional(
  "without lease(), a publication that replaced the entry meanwhile wins over the republication",
  async () => {
    const namespace = db.ns();
    const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace }, windows());
    const other = pipeline<string>({ redis: db.other, ttlMs: 60_000, namespace }, windows());
    await cache.set("k", "old");
    await cache.expire("k");
    const republish = heldNotModified();
    const got = cache.getEntry("k", republish.load);
    await republish.called;
    await other.set("k", "newer");
    republish.release();
    const result = await got;
    assert.equal([result.value, result.source, result.stored], ["newer", "redis", false]);
    assert.is((await envelope(cache.keys("k").data)).payload, '"newer"');
    await other.close();
    await cache.close();
  },
);

Conditional("a compressed payload stays compressed when republished", async () => {
  const codec = compressed<string>("json", { minBytes: 0 });
  const namespace = db.ns();
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace, codec }, windows(), lease());
  const big = "abc".repeat(1_000);
  await cache.set("k", big);
  const key = cache.keys("k").data;
  const before = await db.redis.send(["GET", key], { buffers: true }) as Uint8Array;
  assert.is(String.fromCharCode(before[4]!), "z");
  await cache.expire("k");
  assert.is(await cache.get("k", (ctx) => ctx.notModified()), big);
  const after = await db.redis.send(["GET", key], { buffers: true }) as Uint8Array;
  assert.is(String.fromCharCode(after[4]!), "z");
  const reader = pipeline<string>({ redis: db.other, ttlMs: 60_000, namespace, codec });
  assert.is(await reader.get("k", () => "never"), big);
  assert.is(reader.stats().loads, 0);
  await reader.close();
  await cache.close();
});

Conditional("a stale refresh (swr) sees previous and may answer notModified() in the background", async () => {
  const ev = events();
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 60_000, namespace: db.ns(), onEvent: ev.onEvent },
    swr({ staleMs: 60_000 }),
    coalesce(),
    lease(),
  );
  await cache.get("k", (ctx) => {
    ctx.setEtag("e1");
    return "v";
  });
  await cache.expire("k");
  let etag: string | undefined;
  const stale = await cache.getEntry("k", (ctx) => {
    etag = ctx.previous?.etag;
    return ctx.notModified();
  });
  assert.equal([stale.value, stale.stale], ["v", true]);
  await ev.reach("not-modified", 1);
  await ev.reach("load-end", 2);
  assert.is(etag, "e1");
  const fresh = await cache.getEntry("k", () => "never");
  assert.equal([fresh.value, fresh.stale, fresh.source], ["v", false, "redis"]);
  await cache.close();
});

Conditional("getMany's loadMany sees previous(index) and answers notModified(index) per identity", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, windows(), lease());
  await cache.getMany(["a", "b"], (missing, ctx) => {
    missing.forEach((_, i) => ctx.setEtag(i, `e-${String(missing[i])}`));
    return Promise.resolve(missing.map((id) => `${String(id)}1`));
  });
  const before = await envelope(cache.keys("a").data);
  await cache.expire("a");
  await cache.expire("b");
  const previous: unknown[] = [];
  const values = await cache.getMany(["a", "b", "c"], (missing, ctx) => {
    missing.forEach((_, i) => previous.push(ctx.previous(i)?.etag));
    return Promise.resolve(missing.map((id, i) => (id === "a" ? ctx.notModified(i) : `${String(id)}2`)));
  });
  assert.equal(values, ["a1", "b2", "c2"]);
  assert.equal(previous, ["e-a", "e-b", undefined]);
  const after = await envelope(cache.keys("a").data);
  assert.equal([after.payload, after.etag, after.id !== before.id], [before.payload, "e-a", true]);
  assert.equal((await envelope(cache.keys("b").data)).etag, undefined, "a new value without setEtag has none");
  assert.is(cache.stats().notModified, 1);
  await cache.close();
});

Conditional("a loader typed by the cache sees previous.value with the cache's type", async () => {
  const cache = pipeline<number>({ redis: db.redis as RedisClient, ttlMs: 60_000, namespace: db.ns() }, windows());
  await cache.set("k", 41);
  await cache.expire("k");
  assert.is(await cache.get("k", (ctx) => (ctx.previous?.value ?? 0) + 1), 42);
  await cache.close();
});

Conditional.run();
