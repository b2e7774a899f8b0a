/**
 * near() without client tracking, across two OS processes: where CLIENT
 * TRACKING is refused by an ACL (Redis Cloud rejects `client|tracking`), where
 * CLIENT is renamed away (Memorystore disables CLIENT; older ElastiCache
 * refused tracking) and over RESP2, a set() in one process reaches the other's
 * near tier by the invalidation message it publishes: the next get there
 * reads the new value. Also: the handshake without CLIENT SETNAME, and the
 * listening connection's loss.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, type RedisClient } from "../../resp/client.ts";
import { near } from "../../strategies/near.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { epochKeyOf } from "../../strategies/pipeline/coherence/version_keys.ts";
import { useRedis } from "../support/fixture.ts";
import { runWorkers } from "../support/processes.ts";
import { events, untilNearHit } from "../support/strategies.ts";
import { until, within } from "../support/wait.ts";

const WORKER = new URL("./_near_messages_worker.ts", import.meta.url);

interface Seen {
  mode: string;
  modes: string[];
  value: string;
  nearHitsBefore: number;
  nearHits: number;
}

/** Set "k" here, let the worker keep it near, set it again here: what did the worker read next? */
async function acrossProcesses(db: ReturnType<typeof useRedis>, url: string, resp: 2 | 3): Promise<Seen> {
  const namespace = db.ns();
  const writerRedis = await db.client({ url, resp: 3 });
  const writer = pipeline({ redis: writerRedis, ttlMs: 60_000, namespace });
  const waiter = await db.client({ resp: 2 });
  try {
    await writer.set("k", "v0");
    const done = runWorkers(db.redis, WORKER, namespace, [[url, db.url, namespace, String(resp)]]);
    const [, kept] = (await waiter.send(["BLPOP", `${namespace}:near`, 30])) as [string, string];
    assert.is(kept, "messages");
    await writer.set("k", "v1");
    const [line] = await done;
    return JSON.parse(line!) as Seen;
  } finally {
    await writer.close();
  }
}

// ---------------------------------------------------------------------------

const Refused = suite("near() where an ACL refuses CLIENT TRACKING (as Redis Cloud does)");
const acl = useRedis(Refused, { prefix: "nm-acl", clients: 1 });
Refused.before(async () => {
  const rule = ["on", ">pw", "~*", "&*", "+@all", "-client|tracking"];
  assert.is(await acl.redis.send(["ACL", "SETUSER", "app", ...rule]), "OK");
});

Refused("a set() in one process reaches the other's near tier by message (RESP3, tracking refused)", async () => {
  const url = `redis://app:pw@127.0.0.1:${acl.server.port}`;
  const seen = await acrossProcesses(acl, url, 3);
  assert.equal([seen.mode, seen.modes], ["messages", ["messages"]]);
  assert.ok(seen.nearHitsBefore >= 1);
  assert.is(seen.value, "v1");
  assert.is(seen.nearHits, seen.nearHitsBefore, "the read after the invalidation was served from memory");
});

Refused("the listening connection's loss drops the near entries; it comes back and serves again", async () => {
  const url = `redis://app:pw@127.0.0.1:${acl.server.port}`;
  const redis = await connect({ url, resp: 3 });
  const ev = events();
  const cache = pipeline({ redis, ttlMs: 60_000, namespace: acl.ns(), onEvent: ev.onEvent }, near());
  try {
    assert.is(await cache.get("k", () => "v"), "v");
    await untilNearHit(cache, "k", "v");
    assert.is(cache.stats().nearEntries, 1);
    // Kill the listening connection (its name-less, non-tracking sibling), not the command connection.
    const list = String(await acl.redis.send(["CLIENT", "LIST", "TYPE", "pubsub"]));
    const id = /id=(\d+)/.exec(list)?.[1];
    assert.ok(id !== undefined, "no subscriber connection");
    const dropped = ev.reach("near-invalidation", 1);
    assert.is(await acl.redis.send(["CLIENT", "KILL", "ID", id!]), 1);
    await within(dropped, "the near entries' drop");
    assert.is(cache.stats().nearEntries, 0);
    assert.ok(redis.connected, "the command connection was touched");
    await untilNearHit(cache, "k", "v");
  } finally {
    await cache.close();
    redis.destroy();
  }
});

Refused("tracking refused after a reconnect (the ACL changed): messages take over, with an event", async () => {
  assert.is(await acl.redis.send(["ACL", "SETUSER", "later", "on", ">pw", "~*", "&*", "+@all"]), "OK");
  const url = `redis://later:pw@127.0.0.1:${acl.server.port}`;
  const redis = await connect({ url, resp: 3 });
  const ev = events();
  const namespace = acl.ns();
  const cache = pipeline({ redis, ttlMs: 60_000, namespace, onEvent: ev.onEvent }, near());
  const writer = pipeline({ redis: await acl.client({ resp: 3 }), ttlMs: 60_000, namespace });
  try {
    await writer.set("k", "v0");
    assert.is(await cache.get("k", () => "x"), "v0");
    assert.is(cache.invalidationMode(), "tracking");
    assert.is(await acl.redis.send(["ACL", "SETUSER", "later", "-client|tracking"]), "OK");
    // The first event said the mode when tracking came on; the second is the change.
    const changed = ev.reach("invalidation-mode", 2);
    assert.is(await acl.redis.send(["CLIENT", "KILL", "USER", "later"]), 1);
    await within(changed, "the mode change");
    assert.is(cache.invalidationMode(), "messages");
    const event = ev.seen.filter((e) => e.type === "invalidation-mode").at(-1);
    assert.match(event?.type === "invalidation-mode" ? event.reason : "", /NOPERM/);
    await untilNearHit(cache, "k", "v0");
    await writer.set("k", "v1");
    await until(async () => (await cache.get("k", () => "x")) === "v1");
  } finally {
    await Promise.all([cache.close(), writer.close()]);
    redis.destroy();
  }
});

Refused.run();

// ---------------------------------------------------------------------------

const Renamed = suite("near() and the handshake where CLIENT is renamed away (as Memorystore does)");
const renamed = useRedis(Renamed, {
  prefix: "nm-ren",
  clients: 1,
  server: { args: ["--rename-command", "CLIENT", ""] },
});

Renamed("a RESP2 client with a name connects without it, and an event says why", async () => {
  const seen: { type: string; error?: unknown; name?: string }[] = [];
  const redis: RedisClient = await connect({
    url: renamed.url,
    resp: 2,
    name: "herdless-app",
    onEvent: (e) => seen.push(e as never),
  });
  try {
    assert.equal(seen.map((e) => e.type), ["connect", "name-refused", "ready"]);
    assert.is(seen[1]!.name, "herdless-app");
    assert.match(String((seen[1]!.error as Error).message), /unknown command/i);
    assert.is(await redis.send(["PING"]), "PONG");
  } finally {
    redis.destroy();
  }
});

Renamed("a set() in one process reaches the other's near tier by message (RESP3, CLIENT unknown)", async () => {
  const seen = await acrossProcesses(renamed, renamed.url, 3);
  assert.equal([seen.mode, seen.modes], ["messages", ["messages"]]);
  assert.is(seen.value, "v1");
});

Renamed.run();

// ---------------------------------------------------------------------------

const Resp2 = suite("near() over RESP2");
const plain = useRedis(Resp2, { prefix: "nm-r2", clients: 1 });

Resp2("a set() in one process reaches the other's near tier by message (RESP2)", async () => {
  const seen = await acrossProcesses(plain, plain.url, 2);
  // Said once, when the messages came on; never changed.
  assert.equal([seen.mode, seen.modes], ["messages", ["messages"]]);
  assert.is(seen.value, "v1");
});

Resp2("invalidate(), invalidateTags() and clear() elsewhere reach the near tier by message too", async () => {
  const namespace = plain.ns();
  const redis = await plain.client({ resp: 2 });
  const cache = pipeline({ redis, ttlMs: 60_000, namespace }, near());
  const writer = pipeline({ redis: await plain.client({ resp: 2 }), ttlMs: 60_000, namespace });
  const ops: [string, () => Promise<void>][] = [
    ["invalidate", () => writer.invalidate("invalidate")],
    ["invalidateTags", () => writer.invalidateTags(["t"])],
    ["clear", () => writer.clear()],
  ];
  try {
    for (const [name, op] of ops) {
      const get = (value: string) => cache.get(name, () => value, { tags: ["t"] });
      assert.is(await get("old"), "old");
      await untilNearHit(cache, name, "old");
      await op();
      // Served from memory until the message arrives; then read again (a miss, loaded).
      await until(async () => (await get("new")) === "new");
    }
  } finally {
    await Promise.all([cache.close(), writer.close()]);
  }
});

Resp2("an evicted epoch recreated elsewhere is announced: a tier on messages forgets the old token", async () => {
  const namespace = plain.ns();
  const ev = events();
  const a = pipeline({ redis: await plain.client({ resp: 2 }), ttlMs: 60_000, namespace, onEvent: ev.onEvent }, near());
  const b = pipeline({ redis: await plain.client({ resp: 2 }), ttlMs: 60_000, namespace });
  try {
    assert.is(await a.get("warm", () => "w"), "w");
    await untilNearHit(a, "warm", "w");
    // As an allkeys-* eviction policy would: the epoch token goes, unannounced.
    assert.is(await plain.redis.send(["DEL", epochKeyOf(namespace)]), 1);
    const dropped = ev.reach("near-invalidation", 1);
    assert.is(await b.get("x", () => "from b"), "from b"); // recreates the epoch, announces it
    await within(dropped, "the epoch's announcement");
    assert.is(await a.get("x", () => "from a"), "from b", "a judged b's entry by the evicted token");
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

Resp2.run();
