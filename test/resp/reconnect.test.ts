import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, ConnectionError, TimeoutError } from "../../resp/mod.ts";
import { useRedis } from "../support/fixture.ts";
import type { RedisServer } from "../support/redis_server.ts";
import { rejects, until } from "../support/assert.ts";
import { startProxy } from "../support/proxy.ts";

const test = suite<{ server: RedisServer }>("RedisClient: connection loss and reconnect");
useRedis(test, { clients: 0 });

test("connect() rejects with ConnectionError when nothing listens", async ({ server }) => {
  await rejects(
    () => connect({ port: server.port + 0, host: "127.0.0.1", path: "/nonexistent/redis.sock" }),
    ConnectionError,
    /^Cannot connect to unix:\/nonexistent\/redis\.sock: /,
  );
});

test("the server killed mid-batch: written commands reject, none is replayed, the client reconnects to the restarted server", async ({ server }) => {
  const proxy = await startProxy(server.port);
  const redis = await connect({ url: proxy.url, reconnect: { minMs: 10, maxMs: 50 } });
  try {
    const generation = redis.generation;
    await redis.send(["SET", "counter", 0]);
    // Hold the replies so the whole batch is written and executed but unanswered when the server dies.
    proxy.holdReplies();
    const batch = Array.from(
      { length: 1_000 },
      () => redis.send(["INCR", "counter"]).then(() => "ok", (e: Error) => e),
    );
    await until(() => server.cli("GET", "counter").trim() === "1000");
    await server.kill();
    const outcomes = await Promise.all(batch);
    assert.ok(outcomes.every((o) => o instanceof ConnectionError), "every written command rejected");
    assert.ok((outcomes[0] as ConnectionError).message.includes("lost before the reply arrived"));
    proxy.releaseReplies();

    // The restarted server is empty (no persistence): anything replayed would show in the counter.
    await server.restart();
    await until(() => redis.connected, 5000);
    assert.ok(redis.generation > generation, "a reconnect bumps the generation");
    assert.is(await redis.send(["INCR", "counter"]), 1, "no lost INCR was replayed on the new connection");
  } finally {
    redis.destroy();
    await proxy.close();
    if (!server.cli("PING").includes("PONG")) await server.restart();
  }
});

test("an INCR counter proves a cut batch ran exactly once: rejected, executed once, never resent", async ({ server }) => {
  const proxy = await startProxy(server.port);
  const redis = await connect({ url: proxy.url, reconnect: { minMs: 10, maxMs: 50 } });
  try {
    await redis.send(["SET", "exact", 0]);
    proxy.holdReplies();
    const batch = Array.from({ length: 1_000 }, () => redis.send(["INCR", "exact"]).then(() => 1, () => 0));
    await until(() => server.cli("GET", "exact").trim() === "1000");
    proxy.cut();
    proxy.releaseReplies();
    const acknowledged = (await Promise.all(batch)).reduce((a: number, b) => a + b, 0);
    assert.is(acknowledged, 0, "no reply reached the client");
    await until(() => redis.connected, 5000);
    assert.is(await redis.send(["GET", "exact"]), "1000", "the server ran each INCR once; the reconnect resent none");
  } finally {
    redis.destroy();
    await proxy.close();
  }
});

test("commands issued while disconnected wait in the offline queue and run after the reconnect", async ({ server }) => {
  const redis = await connect({ url: server.url, reconnect: { minMs: 10, maxMs: 20 } });
  await server.kill();
  await until(() => !redis.connected);
  const queued = [redis.send(["SET", "q", "1"]), redis.send(["GET", "q"])];
  await server.restart();
  assert.equal(await Promise.all(queued), ["OK", "1"]);
  redis.destroy();
});

test("a command that times out in the offline queue is never written", async ({ server }) => {
  const redis = await connect({ url: server.url, reconnect: { minMs: 10, maxMs: 20 } });
  await server.kill();
  await until(() => !redis.connected);
  await rejects(
    () => redis.send(["INCR", "never"], { timeoutMs: 30 }),
    TimeoutError,
    /^Command INCR timed out: 'timeoutMs' of 30 ms ran out: not connected to redis:\/\/127\.0\.0\.1:\d+ \(last error: .+\)$/,
  );
  await server.restart();
  await until(() => redis.connected);
  assert.is(await redis.send(["GET", "never"]), null);
  redis.destroy();
});

test("offlineQueue: false fails fast while disconnected; a full queue refuses more", async ({ server }) => {
  const fast = await connect({ url: server.url, offlineQueue: false, reconnect: { minMs: 10, maxMs: 20 } });
  const small = await connect({ url: server.url, offlineQueue: 2, reconnect: { minMs: 10, maxMs: 20 } });
  await server.kill();
  await until(() => !fast.connected && !small.connected);
  await rejects(() => fast.send(["PING"]), ConnectionError, /^Not connected to redis:\/\/127\.0\.0\.1:\d+$/);
  const held = [small.send(["PING"]), small.send(["PING"])];
  await rejects(() => small.send(["PING"]), ConnectionError, "The offline queue is full (2 commands)");
  await server.restart();
  assert.equal(await Promise.all(held), ["PONG", "PONG"]);
  fast.destroy();
  small.destroy();
});

test("a dead Redis is an error in bounded time: offlineTimeoutMs", async ({ server }) => {
  const redis = await connect({ url: server.url, offlineTimeoutMs: 100, reconnect: { minMs: 10, maxMs: 20 } });
  await server.kill();
  await until(() => !redis.connected);
  const started = Date.now();
  await rejects(
    () => redis.send(["PING"]),
    ConnectionError,
    /^Not connected to redis:\/\/127\.0\.0\.1:\d+ for 100 ms \(offlineTimeoutMs\) \(last error: .+\)$/,
  );
  assert.ok(Date.now() - started >= 100);
  redis.destroy();
  await server.restart();
});

test("reconnect: false closes the client for good on connection loss", async ({ server }) => {
  const redis = await connect({ url: server.url, reconnect: false });
  await server.kill();
  await until(() => !redis.connected);
  await rejects(() => redis.send(["PING"]), ConnectionError, "The client is closed");
  await server.restart();
});

test("connectTimeoutMs bounds a server that accepts but never answers the handshake", async ({ server }) => {
  const proxy = await startProxy(server.port);
  proxy.holdReplies();
  const started = Date.now();
  const e = await rejects(
    () => connect({ url: proxy.url, name: "hang", connectTimeoutMs: 80 }),
    ConnectionError,
    /^Cannot connect to redis:\/\/127\.0\.0\.1:\d+: the handshake failed \(The handshake timed out: 'connectTimeoutMs' of 80 ms ran out\)$/,
  );
  // Node's timers run on a millisecond loop clock that may fire a timer up to about 2 ms short of real time.
  assert.ok(Date.now() - started >= 78, `rejected after ${Date.now() - started} ms`);
  const cause = e.cause as TimeoutError;
  assert.instance(cause, TimeoutError);
  assert.equal([cause.setting, cause.timeoutMs], ["connectTimeoutMs", 80]);
  await proxy.close();
});

test("subscriptions are restored after a reconnect", async ({ server }) => {
  const sub = await connect({ url: server.url, resp: 3, reconnect: { minMs: 10, maxMs: 20 } });
  const pub = await connect({ url: server.url, reconnect: { minMs: 10, maxMs: 20 } });
  const got: unknown[] = [];
  sub.onPush((p) => got.push(p));
  await sub.send(["SUBSCRIBE", "news"]);
  await server.kill();
  await server.restart();
  await until(() => sub.connected && pub.connected);
  await until(async () => (await pub.send(["PUBLISH", "news", "back"])) === 1);
  await until(() => got.length > 0);
  assert.equal(got[0], ["message", "news", "back"]);
  sub.destroy();
  pub.destroy();
});

test.run();
