import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { RedisClient } from "../../../resp/client.ts";
import { coalesce } from "../../../strategies/coalesce.ts";
import { lease } from "../../../strategies/lease.ts";
import { epochKeyOf, tagKeyPrefix } from "../../../strategies/pipeline/coherence/version_keys.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import { rejects } from "../../support/assert.ts";
import { useRedis } from "../../support/fixture.ts";
import { origin } from "../../support/strategies.ts";
import { deferred, until } from "../../support/wait.ts";
import { startProxy } from "../../support/proxy.ts";

let resp2: RedisClient;

/** Calls of `command` the server has run so far. */
async function calls(command: string): Promise<number> {
  const info = String(await db.redis.send(["INFO", "commandstats"]));
  const match = new RegExp(`cmdstat_${command.toLowerCase()}:calls=(\\d+)`).exec(info);
  return match === null ? 0 : Number(match[1]);
}

const Tags = suite("invalidateTags() and clear()");
const db = useRedis(Tags, { prefix: "tags" });
Tags.before(async () => {
  resp2 = await db.client({ resp: 2 });
});

for (const resp of [3, 2] as const) {
  Tags(`invalidateTags() makes every entry carrying a tag a miss, and nothing else (RESP${resp})`, async () => {
    const cache = pipeline(
      { redis: resp === 3 ? db.redis : resp2, ttlMs: 60_000, namespace: db.ns() },
      coalesce(),
      lease(),
    );
    const o = origin((call) => `v${call}`);
    assert.is(await cache.get("a", o.load, { tags: ["user:1", "all"] }), "v1");
    assert.is(await cache.get("b", o.load, { tags: ["user:2", "all"] }), "v2");
    assert.is(await cache.get("c", o.load), "v3");
    await cache.set("d", "set", { tags: ["user:1"] });
    await cache.invalidateTags(["user:1"]);
    assert.equal(await Promise.all(["a", "b", "c", "d"].map((id) => cache.peek(id))), [
      undefined,
      "v2",
      "v3",
      undefined,
    ]);
    assert.is(await cache.get("a", o.load, { tags: ["user:1", "all"] }), "v4");
    await cache.invalidateTags(["all"]);
    assert.equal(await Promise.all(["a", "b", "c"].map((id) => cache.peek(id))), [undefined, undefined, "v3"]);
    await cache.close();
  });
}

Tags("invalidateTags() costs one command per tag whatever the number of entries", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() });
  await Promise.all(Array.from({ length: 500 }, (_, i) => cache.set(["item", i], i, { tags: ["bulk"] })));
  const before = await calls("set");
  await cache.invalidateTags(["bulk"]);
  assert.is(await calls("set"), before + 1);
  assert.is(await cache.peek(["item", 42]), undefined);
  await cache.close();
});

Tags("a tag invalidated while a tagged entry loads leaves that load's value a miss", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
  const hold = deferred();
  const o = origin((call) => `snapshot ${call}`);
  o.hold = hold.promise;
  const loading = cache.get("k", o.load, { tags: ["t"] });
  await o.called();
  await cache.invalidateTags(["t"]);
  hold.resolve();
  // The caller gets what it loaded; nobody after it does.
  assert.is(await loading, "snapshot 1");
  assert.is(await cache.peek("k"), undefined);
  o.hold = undefined;
  assert.is(await cache.get("k", o.load, { tags: ["t"] }), "snapshot 2");
  await cache.close();
});

// The version keys an entry is checked against (the namespace's epoch, each
// tag's version) can be evicted or deleted; a new version is then drawn, so
// nothing published under the old one is served again.
for (
  const [what, why, versionKey, tags] of [
    ["a tag version", "", (namespace: string) => `${tagKeyPrefix(namespace)}t`, ["t"]],
    ["an epoch", " (eviction, FLUSHALL of the key)", epochKeyOf, undefined],
  ] as const
) {
  Tags(`${what} that vanishes${why} never revives older entries`, async () => {
    const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() });
    await cache.set("k", "v", tags === undefined ? undefined : { tags });
    const namespace = cache.keys("k").data.split(":")[0]!;
    assert.is(await db.redis.send(["DEL", versionKey(namespace)]), 1);
    assert.is(await cache.peek("k"), undefined);
    await cache.close();
  });
}

Tags("clear() makes every entry of the namespace a miss in one command, and only that namespace", async () => {
  const namespace = db.ns();
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace });
  const neighbour = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() });
  await Promise.all(Array.from({ length: 200 }, (_, i) => cache.set(["item", i], i)));
  await neighbour.set("n", "kept");
  const before = await calls("set");
  await cache.clear();
  assert.is(await calls("set"), before + 1);
  assert.is(
    await db.redis.send(["KEYS", `${namespace}*`]).then((k) => (k as string[]).length > 200),
    true,
    "no key deleted",
  );
  assert.is(await cache.peek(["item", 7]), undefined);
  assert.is(await neighbour.peek("n"), "kept");
  await Promise.all([cache.close(), neighbour.close()]);
});

Tags("a load that started before clear() does not revive its entry", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
  const hold = deferred();
  const o = origin((call) => `v${call}`);
  o.hold = hold.promise;
  const loading = cache.get("k", o.load);
  await o.called();
  await cache.clear();
  hold.resolve();
  assert.is(await loading, "v1");
  assert.is(await cache.peek("k"), undefined);
  await cache.close();
});

Tags("invalidateTags() validates its argument", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() });
  await rejects(
    () => cache.invalidateTags("t" as never),
    TypeError,
    "Cannot invalidateTags: 'tags' must be an array of strings, got string",
  );
  await rejects(
    () => cache.invalidateTags([1 as never]),
    TypeError,
    "Cannot invalidateTags: 'tags[0]' must be a non-empty string, got 1",
  );
  await cache.invalidateTags([]);
  await cache.close();
});

Tags("an epoch not known when a read starts is read beside the read's GET, not one round trip after it", async () => {
  const proxy = await startProxy(db.server.port);
  const via = await db.client({ url: proxy.url, resp: 3 });
  try {
    const namespace = db.ns();
    const cache = pipeline({ redis: via, ttlMs: 60_000, namespace });
    const o = origin((call) => `v${call}`);
    // Tracking on, the server clock measured, the epoch created and known.
    assert.is(await cache.get("warm", o.load), "v1");
    const epochKey = epochKeyOf(namespace);
    const epoch = String(await db.redis.send(["GET", epochKey]));
    // Another client rewrites the epoch with the same token: entries stay
    // current, but the cache no longer knows the epoch once told.
    const told = deferred();
    const stop = await via.track({
      invalidate: (keys) => keys.includes(epochKey) && told.resolve(),
      reset: () => {},
    });
    await db.redis.send(["SET", epochKey, epoch]);
    await told.promise;
    proxy.holdReplies();
    const got = cache.get("cold", o.load);
    got.catch(() => {}); // awaited below; a failure must not go unhandled meanwhile
    // Both replies arrive while the first is still held: the epoch's GET was
    // sent with the data key's, before any reply could have prompted it.
    await until(() => proxy.heldText().includes("_\r\n") && proxy.heldText().includes(epoch));
    proxy.releaseReplies();
    assert.is(await got, "v2");
    stop();
    await cache.close();
  } finally {
    via.destroy();
    await proxy.close();
  }
});

Tags.run();
