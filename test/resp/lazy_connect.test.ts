/**
 * connect({ lazyConnect: true }): no I/O until the first command, which
 * leaves with the handshake in one write; a refused connection or handshake
 * rejects the commands of that write.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, ConnectionError, RedisReplyError } from "../../resp/mod.ts";
import { freePort, type RedisServer } from "../support/redis_server.ts";
import { type Proxy, startProxy } from "../support/proxy.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";

const Lazy = suite<{ server: RedisServer; proxy: Proxy }>("connect({ lazyConnect: true })");
useRedis(Lazy, { clients: 0, server: { args: ["--requirepass", "lazy-secret"] } });
Lazy.before(async (ctx) => {
  ctx.proxy = await startProxy(ctx.server.port);
});
Lazy.after(async (ctx) => {
  await ctx.proxy?.close();
});

const text = (chunks: Uint8Array[]) => chunks.map((c) => new TextDecoder().decode(c));

for (const resp of [2, 3] as const) {
  Lazy(
    `RESP${resp}: resolves without opening a socket; the first commands leave with the handshake in one write`,
    async ({ proxy }) => {
      const before = proxy.connections;
      const chunks = proxy.clientChunks.length;
      const redis = await connect({ url: `redis://:lazy-secret@127.0.0.1:${proxy.port}`, resp, lazyConnect: true });
      try {
        assert.is(redis.connected, false);
        assert.is(proxy.connections, before, "no socket before the first command");
        const replies = await Promise.all([
          redis.send(["SET", `lazy${resp}`, "1"]),
          redis.send(["GET", `lazy${resp}`]),
        ]);
        assert.equal(replies, ["OK", "1"]);
        assert.is(proxy.connections, before + 1);
        const sent = text(proxy.clientChunks.slice(chunks));
        assert.is(sent.length, 1, `one write, got ${JSON.stringify(sent)}`);
        const order = [resp === 3 ? "HELLO" : "AUTH", "SET", "GET"].map((verb) => sent[0]!.indexOf(`\r\n${verb}\r\n`));
        assert.ok(
          order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1]!)),
          `handshake then commands: ${sent[0]}`,
        );
      } finally {
        await redis.close();
      }
    },
  );

  Lazy(
    `RESP${resp}: a refused login rejects the commands of that write with its ConnectionError`,
    async ({ server }) => {
      const redis = await connect({ url: `redis://:wrong@127.0.0.1:${server.port}`, resp, lazyConnect: true });
      try {
        const [a, b] = await Promise.allSettled([redis.send(["SET", "lazy:no", "1"]), redis.send(["GET", "lazy:no"])]);
        for (const result of [a, b]) {
          assert.is(result.status, "rejected");
          const error = (result as PromiseRejectedResult).reason;
          assert.instance(error, ConnectionError);
          assert.match(error.message, /the server refused the password of the default user/);
          assert.instance(error.cause, RedisReplyError);
        }
      } finally {
        redis.destroy();
      }
      assert.is(server.cli("-a", "lazy-secret", "--no-auth-warning", "EXISTS", "lazy:no").trim(), "0");
    },
  );
}

Lazy("a refused connection rejects the commands of that write with a ConnectionError naming the target", async () => {
  // A port that was free a moment ago and is closed again: nothing listens.
  const port = await freePort();
  const redis = await connect({ port, lazyConnect: true, reconnect: false });
  try {
    await rejects(
      () => redis.send(["GET", "k"]),
      ConnectionError,
      new RegExp(`^Cannot connect to redis://127\\.0\\.0\\.1:${port}: `),
    );
  } finally {
    redis.destroy();
  }
});

Lazy("lazyConnect must be a boolean", async () => {
  await rejects(
    () => connect({ lazyConnect: "yes" as never }),
    TypeError,
    `Cannot connect: 'lazyConnect' must be a boolean, got "yes"`,
  );
});

Lazy.run();

const Bare = suite<{ server: RedisServer }>("connect({ lazyConnect: true }) with nothing to send first");
useRedis(Bare, { clients: 0 });

// No password, no database, no name: a lazy RESP2 client's first write holds
// the first commands alone, and the first reply must be decoded as its
// command asked (bytes), not as the handshake's would have been.
for (const resp of [2, 3] as const) {
  Bare(`RESP${resp}: the first command's buffers: true is honoured`, async ({ server }) => {
    const setup = await connect({ url: server.url });
    await setup.send(["SET", "bare", "abc"]);
    await setup.close();
    const redis = await connect({ url: server.url, resp, lazyConnect: true });
    try {
      const [first, second] = await Promise.all([
        redis.send(["GET", "bare"], { buffers: true }),
        redis.send(["GET", "bare"], { buffers: true }),
      ]);
      assert.instance(first, Uint8Array);
      assert.instance(second, Uint8Array);
      assert.is(new TextDecoder().decode(first as Uint8Array), "abc");
    } finally {
      await redis.close();
    }
  });
}

Bare.run();
