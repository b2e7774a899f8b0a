/**
 * connectSentinel() against a real Sentinel group (1 master, 2 replicas, 3
 * sentinels, each with its own password): finding and checking the master,
 * following real failovers (`SENTINEL FAILOVER`, a SIGKILLed master), the
 * cache on top of it (a cold burst, near(), a lease across a failover), and
 * every sentinel gone and back.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ConnectionError, isConnectionError } from "../../../resp/errors.ts";
import { connectSentinel, type SentinelClient, type SentinelEvent } from "../../../resp/sentinel/mod.ts";
import { coalesce } from "../../../strategies/coalesce.ts";
import { lease } from "../../../strategies/lease.ts";
import { near } from "../../../strategies/near.ts";
import { ServerClock } from "../../../strategies/pipeline/read/clock.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import { rejects } from "../../support/assert.ts";
import { startFakeServer } from "../../support/fake_server.ts";
import { type Address, type SentinelGroup, startSentinelGroup } from "../../support/redis_sentinel.ts";
import { events, origin, untilNearHit } from "../../support/strategies.ts";
import { deferred, tick, until, within } from "../../support/wait.ts";

const DATA_PASSWORD = "data-secret";
const SENTINEL_PASSWORD = "sentinel-secret";

// --- options, no server needed ---

const options = suite("connectSentinel() options");

options("every setting is validated up front, naming it", () => {
  const bad: [unknown, new (message: string) => Error, string][] = [
    [null, TypeError, "Cannot connectSentinel: options must be an object, got null"],
    [{ name: "m" }, TypeError, "Cannot connect to Sentinel: 'sentinels' must be a non-empty array"],
    [{ name: "m", sentinels: [] }, TypeError, "Cannot connect to Sentinel: 'sentinels' must be a non-empty array"],
    [
      { name: "m", sentinels: ["127.0.0.1:26379"] },
      TypeError,
      `Cannot connect to Sentinel: 'sentinels[0]' must be a redis:// or rediss:// URL, got "127.0.0.1:26379"`,
    ],
    [{ sentinels: ["redis://s"] }, TypeError, "Cannot connect to Sentinel: 'name' must be the master group's name"],
    [
      { sentinels: ["redis://s"], name: "m", host: "10.0.0.1" },
      TypeError,
      "Cannot connect to Sentinel: 'host' is not an option here, the sentinels name the master",
    ],
    [
      { sentinels: ["redis://s"], name: "m", checkIntervalMs: 0 },
      RangeError,
      "Cannot connectSentinel: 'checkIntervalMs' must be a positive integer, got 0",
    ],
    [
      { sentinels: ["redis://s"], name: "m", db: -1 },
      RangeError,
      "Cannot connect: 'db' must be a non-negative integer",
    ],
  ];
  for (const [given, type, message] of bad) {
    assert.throws(
      () => connectSentinel(given as never),
      (e: Error) => e instanceof type && e.message.startsWith(message),
      `${JSON.stringify(given)} -> ${message}`,
    );
  }
});

// --- a real group ---

interface Ctx {
  group: SentinelGroup;
  clients: SentinelClient[];
}

const test = suite<Ctx>("connectSentinel()");

test.before(async (ctx) => {
  ctx.clients = [];
  ctx.group = await startSentinelGroup({ dataPassword: DATA_PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
});

test.after.each((ctx) => {
  for (const client of ctx.clients) client.destroy();
  ctx.clients = [];
});

test.after(async (ctx) => {
  await ctx.group?.stop();
});

/** A client of the group, closed after the test. */
async function open(ctx: Ctx, extra: { resp?: 2 | 3; checkIntervalMs?: number } = {}): Promise<SentinelClient> {
  const client = await connectSentinel({
    sentinels: ctx.group.sentinelUrls,
    name: ctx.group.name,
    password: DATA_PASSWORD,
    ...extra,
  });
  ctx.clients.push(client);
  return client;
}

/** Resolves with the client's next failover event; rejects when none comes within `withinMs` (a deadline, not a measure). */
function nextFailover(client: SentinelClient, withinMs = 20_000): Promise<{ from: string; to: string; at: number }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`the client reported no failover within ${withinMs} ms`));
    }, withinMs);
    const stop = client.onEvent((event: SentinelEvent) => {
      if (event.type !== "failover") return;
      stop();
      clearTimeout(timer);
      resolve({ from: event.from, to: event.to, at: sequence() });
    });
  });
}

const name = (a: Address) => `${a.host}:${a.port}`;

/** After a failover: the old master replicates the new one, so the next test finds 2 replicas again. */
async function resettle(ctx: Ctx, from: Address, to: Address): Promise<void> {
  await ctx.group.demote(from, to);
  await ctx.group.waitSettled({ replicas: 2 });
}

// A logical clock: which of two events came first in this (single-threaded) process.
let clock = 0;
const sequence = () => ++clock;

test("asks the sentinels for the master, with the sentinels' password apart from the data node's", async (ctx) => {
  const client = await open(ctx);
  assert.is(client.master, name(await ctx.group.master()));
  // pending counts what the master has not answered yet, as RedisClient's does (the soak reads it).
  const ping = client.send(["PING"]);
  assert.is(client.pending, 1);
  assert.is(await ping, "PONG");
  assert.is(client.pending, 0);
  assert.is(await client.send(["SET", "sentinel:hello", "world"]), "OK");
  assert.is(await client.send(["GET", "sentinel:hello"]), "world");
  // The data node's password given as the sentinels' (in their URLs) is refused by the data node.
  const wrong = connectSentinel({ sentinels: ctx.group.sentinelUrls, name: ctx.group.name });
  await rejects(
    () => wrong,
    ConnectionError,
    /^Cannot connect to redis:\/\/127\.0\.0\.1:\d+: the server requires a password and none was given/,
  );
  // A group the sentinels do not monitor: every sentinel says so, in bounded time.
  await rejects(
    () => connectSentinel({ sentinels: ctx.group.sentinelUrls, name: "nobody", password: DATA_PASSWORD }),
    ConnectionError,
    /^No sentinel of "nobody" named its master \(127\.0\.0\.1:\d+: it does not know a master named "nobody"; /,
  );
});

test("a sentinel listed first that names a master on port 70000 is passed over: the real sentinels name the master", async (ctx) => {
  // Raw RESP on a socket: HELLO's answer, then the bad address for the master.
  const liar = await startFakeServer((command) =>
    command[0] === "HELLO"
      ? { write: "%1\r\n$5\r\nproto\r\n:3\r\n" }
      : { write: "*2\r\n$9\r\n127.0.0.1\r\n$5\r\n70000\r\n" }
  );
  try {
    const client = await connectSentinel({
      sentinels: [liar.url, ...ctx.group.sentinelUrls],
      name: ctx.group.name,
      password: DATA_PASSWORD,
    });
    ctx.clients.push(client);
    assert.is(client.master, name(await ctx.group.master()));
    assert.ok(liar.commands.some((c) => c[1] === "GET-MASTER-ADDR-BY-NAME"), "the liar was asked first");
    assert.is(await client.send(["PING"]), "PONG");
  } finally {
    await liar.close();
  }
});

test("a data-node user refused ROLE (an @admin command) still connects: the master is then judged by its READONLY replies", async (ctx) => {
  // ACL users are not replicated: every data node gets it.
  await Promise.all(
    ctx.group.nodes.map((n) =>
      ctx.group.cli(n.port, "ACL", "SETUSER", "app", "on", ">app-secret", "~*", "&*", "+@all", "-role")
    ),
  );
  const client = await connectSentinel({
    sentinels: ctx.group.sentinelUrls,
    name: ctx.group.name,
    username: "app",
    password: "app-secret",
  });
  ctx.clients.push(client);
  assert.is(client.master, name(await ctx.group.master()));
  assert.is(await client.send(["SET", "sentinel:app", "1"]), "OK");
});

test("a cold burst through 2 sentinel clients calls the origin once", async (ctx) => {
  const [a, b] = [await open(ctx), await open(ctx)];
  const namespace = `burst${Date.now()}`;
  const caches = [a, b].map((redis) => pipeline<string>({ redis, ttlMs: 60_000, namespace }, coalesce(), lease()));
  const o = origin(() => "loaded once");
  const hold = deferred();
  o.hold = hold.promise;
  const gets = caches.flatMap((cache) => Array.from({ length: 20 }, () => cache.get("cold", o.load)));
  await o.called();
  hold.resolve();
  assert.equal(new Set(await Promise.all(gets)), new Set(["loaded once"]));
  assert.is(o.calls, 1);
  await Promise.all(caches.map((c) => c.close()));
});

test("near() over a RESP2 sentinel client keeps coherent from invalidation messages on a sibling (duplicate())", async (ctx) => {
  const reader = await open(ctx, { resp: 2 });
  const writer = await open(ctx);
  const namespace = `msg${Date.now()}`;
  const cached = pipeline<string>({ redis: reader, ttlMs: 60_000, namespace }, near({ maxEntries: 100 }));
  const writes = pipeline<string>({ redis: writer, ttlMs: 60_000, namespace });
  assert.is(await cached.get("k", () => "before"), "before");
  await untilNearHit(cached, "k", "before");
  await writes.set("k", "after");
  await until(async () => (await cached.get("k", () => "unused")) === "after", 5000);
  await Promise.all([cached.close(), writes.close()]);
});

test("a server the sentinels name that says it is a replica (ROLE) is refused, and used once it is master again", async (ctx) => {
  const client = await open(ctx);
  const refusals: string[] = [];
  client.onEvent((event) => {
    if (event.type === "error") refusals.push((event.error as Error).message);
  });
  const master = await ctx.group.master();
  const replica = ctx.group.nodes.find((n) => n.port !== master.port)!;
  // Demoted behind the sentinels' back (they still name it), and the client's connection cut.
  await ctx.group.cli(master.port, "REPLICAOF", "127.0.0.1", String(replica.port));
  await ctx.group.cli(master.port, "CLIENT", "KILL", "TYPE", "normal");
  await until(() => refusals.some((m) => m.endsWith("the handshake failed (ROLE says slave, not master)")), 5000);
  assert.not.ok(client.connected);
  const reply = client.send(["SET", "sentinel:role", "queued"]);
  await ctx.group.cli(master.port, "REPLICAOF", "NO", "ONE");
  assert.is(await reply, "OK", "the queued command went to the master once it said so");
  assert.is(client.master, name(master));
  await ctx.group.waitSettled({ replicas: 2 });
});

test("SENTINEL FAILOVER under 4 read and write loops: errors only until the client reports the switch, then none, and no read older than a write it follows; the old master is still writable when the client leaves it", async (ctx) => {
  const client = await open(ctx);
  const failover = nextFailover(client);
  const stamp = `f${Date.now()}`;
  const keys = [`${stamp}:a`, `${stamp}:b`];
  let stop = false;
  let started = Infinity; // sequence() when SENTINEL FAILOVER was sent
  const errors: { at: number; error: unknown }[] = [];
  /** Writes acknowledged: key, value, when it began and when it was acknowledged. */
  const acks: { key: string; value: number; began: number; at: number }[] = [];
  const reads: { key: string; value: number; began: number }[] = [];
  let afterSwitch = 0;
  let switchedAt = Infinity;
  const writer = async (key: string) => {
    for (let value = 1; !stop; value++) {
      const began = sequence();
      try {
        await client.send(["SET", key, value]);
        acks.push({ key, value, began, at: sequence() });
        if (began > switchedAt) afterSwitch++;
      } catch (error) {
        errors.push({ at: sequence(), error });
        // A client that fails at once must not starve the event loop.
        await tick();
      }
    }
  };
  const reader = async (key: string) => {
    while (!stop) {
      const began = sequence();
      try {
        const reply = await client.send(["GET", key]);
        reads.push({ key, value: Number(reply ?? 0), began });
        if (began > switchedAt) afterSwitch++;
      } catch (error) {
        errors.push({ at: sequence(), error });
        // A client that fails at once must not starve the event loop.
        await tick();
      }
    }
  };
  const loops = [writer(keys[0]!), writer(keys[1]!), reader(keys[0]!), reader(keys[1]!)];
  let from: Address;
  let to: Address;
  try {
    await until(() => acks.length > 100);
    assert.is(errors.length, 0, "no error before the failover");
    started = sequence();
    ({ from, to } = await ctx.group.failover());
    const reported = await failover;
    switchedAt = reported.at;
    assert.equal([reported.from, reported.to], [name(from), name(to)]);
    // Checked at once: had the client waited for the old master to be demoted
    // (it closes its clients then), this would say slave.
    assert.is(await ctx.group.role(from.port), "master", "the old master is still writable");
    await until(() => afterSwitch >= 400, 10_000);
  } finally {
    // Always: loops left running on a destroyed client would spin on its rejections.
    stop = true;
    await Promise.all(loops);
  }

  for (const { at, error } of errors) {
    assert.ok(isConnectionError(error), `only lost-connection errors, got ${String(error)}`);
    assert.ok(at > started && at < switchedAt, "an error outside the window from the failover to its report");
  }
  // Reads that began after the report see every write acknowledged after it, and nothing older.
  for (const read of reads) {
    if (read.began < switchedAt) continue;
    const newest = acks.filter((w) => w.key === read.key && w.began > switchedAt && w.at < read.began);
    const floor = Math.max(0, ...newest.map((w) => w.value));
    assert.ok(read.value >= floor, `read ${read.value} of ${read.key} after write ${floor} was acknowledged`);
  }
  // Writes after the report went to the new master, not to the still-writable old one.
  const last = acks.filter((w) => w.key === keys[0]).at(-1)!.value;
  assert.is((await ctx.group.cli(to.port, "GET", keys[0]!))[0], String(last));
  assert.not.equal((await ctx.group.cli(from.port, "GET", keys[0]!))[0], String(last));
  await resettle(ctx, from, to);
});

test("across one failover: near() drops its entries and hears the new master's writes, the server clock is measured again; a lease owner that lost its lease cannot overwrite the newer value", async (ctx) => {
  // One failover serves both (each costs seconds): set up both sides, switch, then check each.
  const reader = await open(ctx, { resp: 3 });
  const writer = await open(ctx);
  const namespace = `fo${Date.now()}`;
  const cached = pipeline<string>({ redis: reader, ttlMs: 60_000, namespace }, near({ maxEntries: 100 }));
  const writes = pipeline<string>({ redis: writer, ttlMs: 60_000, namespace });
  assert.is(await cached.get("k", () => "before"), "before");
  await untilNearHit(cached, "k", "before");
  const first = pipeline<string>({ redis: reader, ttlMs: 60_000, namespace }, lease({ leaseMs: 300 }));
  const second = pipeline<string>({ redis: writer, ttlMs: 60_000, namespace }, lease({ leaseMs: 5000 }));
  const hold = deferred();
  const slow = origin(() => "older");
  slow.hold = hold.promise;
  const loading = first.get("owned", slow.load);
  await slow.called();

  // The cache's estimate of the server clock is per server: the new master gets its own.
  const clock = new ServerClock({ redis: reader, now: () => performance.now(), commandTimeoutMs: 5000 });
  await clock.sync("k");

  const failover = nextFailover(reader);
  const { from, to } = await ctx.group.failover();
  await failover;

  assert.not.ok(clock.known("k"), "the old master's clock estimate is not used for the new one");
  await clock.sync("k");
  assert.ok(clock.known("k"));

  // near(): written on the new master after the switch; a near entry kept across it would hide this.
  await until(() => reader.tracking, 5000);
  await writes.set("k", "after");
  await until(async () => (await cached.get("k", () => "unused")) === "after", 5000);
  // Tracking is on again on the new master: its next write is seen too.
  await until(async () => {
    const hits = cached.stats().nearHits;
    await cached.get("k", () => "unused");
    return cached.stats().nearHits > hits;
  });
  await writes.set("k", "again");
  await until(async () => (await cached.get("k", () => "unused")) === "again", 5000);

  // The lease: on the new master the old owner's lease is gone (expired, or never replicated).
  const keys = first.keys("owned");
  await until(async () => (await writer.send(["EXISTS", keys.lease])) === 0, 10_000);
  assert.is(await second.get("owned", () => "newer"), "newer");
  hold.resolve();
  assert.is(await loading, "newer", "the old owner returns the value stored now");
  assert.is(first.stats().lateRejected, 1);
  assert.match(String(await writer.send(["GET", keys.data])), /"newer"$/);
  await Promise.all([cached.close(), writes.close(), first.close(), second.close()]);
  await resettle(ctx, from, to);
});

test("a write the demoted master refused with READONLY is sent once more, to the new master", async (ctx) => {
  // No periodic check, and the +switch-master subscription cut: only the old master can tell the client.
  const client = await open(ctx, { checkIntervalMs: 600_000 });
  assert.is(await client.send(["SET", "sentinel:readonly", "before"]), "OK");
  await Promise.all(ctx.group.sentinels.map((s) => ctx.group.cli(s.port, "CLIENT", "KILL", "TYPE", "pubsub")));
  const failover = nextFailover(client);
  const { from, to } = await ctx.group.failover();
  // Demoted now, without closing its clients (the sentinels would close them too, some seconds later).
  await ctx.group.demote(from, to);
  await until(async () => (await ctx.group.role(from.port)) === "slave");
  assert.is(client.master, name(from), "the client has not heard of the failover");
  assert.is(await client.send(["SET", "sentinel:readonly", "after"]), "OK");
  assert.equal((await failover).to, name(to));
  assert.is((await ctx.group.cli(to.port, "GET", "sentinel:readonly"))[0], "after");
  await ctx.group.waitSettled({ replicas: 2 });
});

test("onRedisDown 'local' across a SIGKILLed master: no get fails until the client reports the failover (a near entry kept, one load for a missing key, nothing stored), then gets read the new master", async (ctx) => {
  const client = await open(ctx, { resp: 3 });
  const writer = await open(ctx);
  const namespace = `down${Date.now()}`;
  const seen = events();
  const cache = pipeline<string>(
    { redis: client, ttlMs: 60_000, namespace, onRedisDown: "local", onEvent: seen.onEvent },
    near({ maxEntries: 100 }),
    coalesce(),
    lease(),
  );
  const writes = pipeline<string>({ redis: writer, ttlMs: 60_000, namespace });
  assert.is(await cache.get("kept", () => "v1"), "v1");
  await untilNearHit(cache, "kept", "v1");

  const old = await ctx.group.master();
  const withinMs = ctx.group.downAfterMs + ctx.group.failoverTimeoutMs + 5000;
  const failover = nextFailover(client, withinMs);
  const writerFailover = nextFailover(writer, withinMs);
  let reported = false;
  void failover.then(() => (reported = true), () => (reported = true));
  ctx.group.node(old.port).signal("SIGKILL");
  // The window opens once the client has seen its connection go: a get that read the master just before it died
  // is forced in redis_down.test.ts, where the kill waits for the get's load.
  await until(() => !client.connected, 5000);

  // The failover's window: every get is served from this process, none waits for the dead master.
  const never = origin<string>(() => "never");
  const missing = origin(() => "loaded while down");
  const failures: unknown[] = [];
  let rounds = 0;
  while (!reported) {
    const results = await Promise.allSettled([
      cache.get("kept", never.load, { timeoutMs: 2000 }),
      cache.get("missing", missing.load, { timeoutMs: 2000 }),
    ]);
    for (const r of results) if (r.status === "rejected") failures.push(r.reason);
    if (results[0].status === "fulfilled") assert.is(results[0].value, "v1", "the near entry, kept through the outage");
    if (results[1].status === "fulfilled") assert.is(results[1].value, "loaded while down");
    rounds++;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await failover;
  assert.equal(failures, [], "no get failed while the master was down");
  assert.ok(rounds > 5, `gets ran through the window (${rounds} rounds)`);
  assert.is(never.calls, 0, "the kept entry never needed its origin");
  assert.is(missing.calls, 1, "one load of the missing key for the whole window, kept for its fresh window");
  assert.ok(seen.seen.some((e) => e.type === "redis-down"), "redis-down was reported");
  assert.ok(cache.stats().degraded > 0);

  // Back up: what was loaded while down was not stored, and gets read the new master again.
  await writerFailover;
  assert.is(await writes.peek("missing"), undefined, "the value loaded while down was not stored");
  await writes.set("kept", "v2");
  await until(async () => (await cache.get("kept", never.load)) === "v2", 5000);
  await within(seen.reach("redis-up", 1), "redis-up", 5000);
  assert.is(await cache.get("missing", () => "loaded after"), "loaded after");
  assert.is(await writes.peek("missing"), "loaded after");
  assert.is(never.calls, 0);
  await Promise.all([cache.close(), writes.close()]);

  // The killed master comes back as the new master's replica, for the tests after this one.
  const dead = ctx.group.node(old.port);
  await dead.restart();
  await ctx.group.demote(old, await ctx.group.master());
  await ctx.group.waitSettled({ replicas: 2 });
});

test("a SIGKILLed master: the client is back on the promoted replica within down-after + failover-timeout + 5 s", async (ctx) => {
  const client = await open(ctx);
  const failover = nextFailover(client, ctx.group.downAfterMs + ctx.group.failoverTimeoutMs + 5000);
  const old = await ctx.group.master();
  ctx.group.node(old.port).signal("SIGKILL");
  const reported = await failover;
  assert.is(reported.from, name(old));
  assert.is(await client.send(["SET", "sentinel:after-kill", "1"]), "OK");
  assert.is(reported.to, name(await ctx.group.master()));
  // Left dead: the tests after this one need no replica.
});

test("sentinels learned from SENTINEL sentinels serve when the only one given is gone", async (ctx) => {
  const [given, ...others] = ctx.group.sentinels;
  const client = await connectSentinel({
    sentinels: [ctx.group.sentinelUrls[0]!],
    name: ctx.group.name,
    password: DATA_PASSWORD,
    checkIntervalMs: 100,
  });
  ctx.clients.push(client);
  await until(() => client.sentinels.length === 3, 5000);
  assert.equal(new Set(client.sentinels), new Set(ctx.group.sentinels.map((s) => `127.0.0.1:${s.port}`)));
  await given!.kill();
  // A sibling starts from the list this client learned, the first of which is gone.
  const sibling = await client.duplicate();
  ctx.clients.push(sibling);
  assert.is(sibling.master, client.master);
  assert.ok(others.some((s) => sibling.sentinels[0] === `127.0.0.1:${s.port}`), "a learned sentinel answered");
  // Left stopped: the next test stops and restarts them all.
});

test("every sentinel stopped: a connect fails in bounded time, the client keeps its master, and both recover when the sentinels return", async (ctx) => {
  const client = await open(ctx, { checkIntervalMs: 200 });
  const errors: unknown[] = [];
  client.onEvent((event) => {
    if (event.type === "error") errors.push(event.error);
  });
  await Promise.all(ctx.group.sentinels.map((s) => s.kill()));
  await rejects(
    () => connectSentinel({ sentinels: ctx.group.sentinelUrls, name: ctx.group.name, password: DATA_PASSWORD }),
    ConnectionError,
    /^No sentinel of "herdless" named its master \(127\.0\.0\.1:\d+: Cannot connect to redis:\/\/127\.0\.0\.1:\d+/,
  );
  await until(() => errors.length > 0, 5000);
  assert.ok(isConnectionError(errors[0]));
  assert.is(await client.send(["PING"]), "PONG", "the master is still served");
  await Promise.all(ctx.group.sentinels.map((s) => s.restart()));
  const again = await open(ctx);
  assert.is(again.master, client.master);
});

options.run();
test.run();
