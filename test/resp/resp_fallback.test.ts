/**
 * connect() asks for RESP3 and falls back to RESP2 where HELLO 3 is refused.
 * The servers are real redis-servers that refuse it as the servers and
 * proxies met in the field do: HELLO renamed away answers "ERR unknown
 * command", as Redis 5 and proxies that do not know HELLO do.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, ConnectionError, RedisReplyError, type Reply } from "../../resp/mod.ts";
import type { ConnectionEvent } from "../../resp/types.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import { type Proxy, startProxy } from "../support/proxy.ts";
import type { RedisServer } from "../support/redis_server.ts";
import { until } from "../support/wait.ts";

const SECRET = "fb-secret";
const Old = suite<{ server: RedisServer; proxy: Proxy }>("connect() on a server that refuses HELLO");
useRedis(Old, { clients: 0, server: { args: ["--rename-command", "HELLO", "", "--requirepass", SECRET] } });
Old.before(async (ctx) => {
  ctx.proxy = await startProxy(ctx.server.port);
});
Old.after(async (ctx) => {
  await ctx.proxy?.close();
});

const url = (port: number, path = "") => `redis://:${SECRET}@127.0.0.1:${port}${path}`;
const text = (chunks: Uint8Array[]) => chunks.map((c) => new TextDecoder().decode(c)).join("");

Old("falls back to RESP2 with a resp-fallback event; the login, the db and the name stand", async ({ server }) => {
  const events: ConnectionEvent[] = [];
  const redis = await connect({ url: url(server.port, "/2"), name: "fallen", onEvent: (e) => events.push(e) });
  try {
    const address = `127.0.0.1:${server.port}`;
    assert.equal(events.map((e) => e.type), ["connect", "resp-fallback", "ready"]);
    const fallback = events[1] as Extract<ConnectionEvent, { type: "resp-fallback" }>;
    assert.is(fallback.server, address);
    assert.instance(fallback.error, RedisReplyError);
    assert.match((fallback.error as RedisReplyError).message, /unknown command/);
    assert.is(redis.resp, 2);
    const info = (await redis.send(["CLIENT", "INFO"])) as string;
    assert.match(info, / db=2 /);
    assert.match(info, / name=fallen /);
    assert.match(info, / resp=2\b/);
    await redis.send(["SET", "fallback:k", "v"]);
    assert.is(await redis.send(["GET", "fallback:k"]), "v");
  } finally {
    redis.destroy();
  }
});

Old(
  "resp: 3 given is what is spoken: a server refusing HELLO fails connect(), naming the refusal",
  async ({ server }) => {
    const e = (await rejects(
      () => connect({ url: url(server.port), resp: 3 }),
      ConnectionError,
      new RegExp(
        `^Cannot connect to redis://:\\*\\*\\*@127\\.0\\.0\\.1:${server.port}: the server refused HELLO \\(ERR unknown command`,
      ),
    )) as ConnectionError;
    assert.instance(e.cause, RedisReplyError);
  },
);

Old("without a password the fallback still fails connect(), naming the missing password", async ({ server }) => {
  const events: string[] = [];
  await rejects(
    () => connect({ url: server.url, onEvent: (e) => events.push(e.type) }),
    ConnectionError,
    new RegExp(
      `^Cannot connect to redis://127\\.0\\.0\\.1:${server.port}: the server requires a password and none was given \\(NOAUTH `,
    ),
  );
  assert.equal(events, ["connect", "error"]);
});

Old(
  "lazyConnect: the first commands leave with the handshake and are answered after the fallback",
  async ({ proxy }) => {
    const chunks = proxy.clientChunks.length;
    const redis = await connect({ url: url(proxy.port), lazyConnect: true });
    try {
      assert.equal(await Promise.all([redis.send(["SET", "lazy:fb", "1"]), redis.send(["GET", "lazy:fb"])]), [
        "OK",
        "1",
      ]);
      assert.is(redis.resp, 2);
      const sent = text(proxy.clientChunks.slice(chunks));
      assert.ok(sent.indexOf("HELLO") < sent.indexOf("SET"), `one write, HELLO first: ${sent}`);
    } finally {
      redis.destroy();
    }
  },
);

Old(
  "after the fallback, a reconnect speaks RESP2 from the start and restores subscriptions RESP2's way",
  async ({ server, proxy }) => {
    const publisher = await connect({ url: url(server.port), resp: 2 });
    const subscriber = await connect({ url: url(proxy.port), reconnect: { minMs: 10, maxMs: 20 } });
    try {
      const messages: Reply[][] = [];
      subscriber.onPush((push) => messages.push(push));
      await subscriber.send(["SUBSCRIBE", "fb:news"]);
      const generation = subscriber.generation;
      const chunks = proxy.clientChunks.length;
      proxy.cut();
      await until(() => subscriber.connected && subscriber.generation > generation);
      const resent = text(proxy.clientChunks.slice(chunks));
      assert.not.match(resent, /HELLO/, `no HELLO after the fallback: ${resent}`);
      assert.match(resent, /SUBSCRIBE/);
      await until(async () => (await publisher.send(["PUBLISH", "fb:news", "hello"])) === 1);
      await until(() => messages.length > 0);
      assert.equal(messages[0], ["message", "fb:news", "hello"]);
    } finally {
      publisher.destroy();
      subscriber.destroy();
    }
  },
);

Old("a duplicate speaks RESP2 at once; track() is refused, naming RESP3", async ({ server }) => {
  const redis = await connect({ url: url(server.port) });
  const events: string[] = [];
  let sibling: Awaited<ReturnType<typeof connect>> | undefined;
  try {
    sibling = await redis.duplicate();
    sibling.onEvent((e) => events.push(e.type));
    assert.is(sibling.resp, 2);
    await rejects(
      () => redis.track({ invalidate() {}, reset() {} }),
      TypeError,
      "Cannot track: client tracking needs a RESP3 connection (connect({ resp: 3 }))",
    );
  } finally {
    sibling?.destroy();
    redis.destroy();
  }
});

const Modern = suite<{ server: RedisServer }>("connect() on a server that takes HELLO 3");
useRedis(Modern, { clients: 0 });

Modern("a server that takes HELLO 3 is spoken to in RESP3 by default, with no event", async ({ server }) => {
  const events: string[] = [];
  const redis = await connect({ url: server.url, onEvent: (e) => events.push(e.type) });
  try {
    assert.equal(events, ["connect", "ready"]);
    assert.is(redis.resp, 3);
    assert.match((await redis.send(["CLIENT", "INFO"])) as string, / resp=3\b/);
  } finally {
    redis.destroy();
  }
});

Old.run();
Modern.run();
