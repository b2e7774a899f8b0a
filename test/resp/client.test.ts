import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, ConnectionError, type RedisClient, RedisReplyError, TimeoutError } from "../../resp/mod.ts";
import { useRedis } from "../support/fixture.ts";
import type { RedisServer } from "../support/redis_server.ts";
import { type Proxy, startProxy } from "../support/proxy.ts";
import { rejects } from "../support/assert.ts";
import { deferred, tick, until } from "../support/wait.ts";
import { testedServer } from "../support/server_text.ts";
import { openTransport } from "../../resp/transport/mod.ts";
import { resolveConnectOptions } from "../../resp/options.ts";
import { reconnectDelay } from "../../resp/connection/backoff.ts";
import { watchedDeadlines } from "../../resp/connection/debug.ts";

const test = suite<{ server: RedisServer; redis: RedisClient }>("RedisClient");

useRedis(test, { connect: {} });

test("10,000 concurrent commands resolve in order", async ({ redis }) => {
  await redis.send(["DEL", "order"]);
  const replies = await Promise.all(Array.from({ length: 10_000 }, () => redis.send(["INCR", "order"])));
  assert.equal(replies, Array.from({ length: 10_000 }, (_, i) => i + 1));
});

test("a server error rejects with RedisReplyError and its code, and the next command still works", async ({ redis }) => {
  await redis.send(["SET", "str", "x"]);
  const e = (await rejects(() => redis.send(["LPUSH", "str", "y"]), RedisReplyError, /^WRONGTYPE /)) as RedisReplyError;
  assert.is(e.code, "WRONGTYPE");
  const unknown =
    (await rejects(() => redis.send(["NOPE"]), RedisReplyError, /^ERR unknown command 'NOPE'/)) as RedisReplyError;
  assert.is(unknown.code, "ERR");
  assert.is(await redis.send(["GET", "str"]), "x");
});

test("bad arguments are a TypeError naming the argument, and nothing is sent", async ({ redis }) => {
  await rejects(
    () => redis.send(["SET", "k", {} as never]),
    TypeError,
    "Cannot send: argument 2 must be a string, finite number or Uint8Array, got object",
  );
  await rejects(
    () => redis.send(["SET", "k", NaN]),
    TypeError,
    "Cannot send: argument 2 must be a string, finite number or Uint8Array, got NaN",
  );
  await rejects(() => redis.send([]), TypeError, "Cannot send: 'command' must be a non-empty array");
  assert.is(await redis.send(["EXISTS", "k"]), 0);
});

test("a command whose encoding throws at its write rejects at once with that error; the rest of its write still runs", async ({ redis }) => {
  // Valid when sent, its buffer transferred away before the tick's write:
  // encoding it throws inside the flush (as utf8Write without a length does
  // under workerd), where nobody but the command can hear it.
  const value = new Uint8Array([1, 2, 3]);
  const before = redis.send(["SET", "enc:before", "1"]);
  const broken = redis.send(["SET", "enc:broken", value]);
  const after = redis.send(["SET", "enc:after", "2"]);
  structuredClone(value.buffer, { transfer: [value.buffer] });
  await rejects(() => broken, TypeError, /detached/);
  assert.is(await before, "OK");
  assert.is(await after, "OK");
  assert.equal(await redis.send(["MGET", "enc:before", "enc:broken", "enc:after"]), ["1", null, "2"]);
});

test("numbers are sent in decimal", async ({ redis }) => {
  await redis.send(["SET", "n", 42.5]);
  assert.is(await redis.send(["GET", "n"]), "42.5");
  assert.is(await redis.send(["INCRBY", "i", -7]), -7);
});

const wire = suite<{ server: RedisServer; proxy: Proxy }>("RedisClient on the wire");
useRedis(wire, { clients: 0 });
wire.before(async (ctx) => {
  ctx.proxy = await startProxy(ctx.server.port);
});
wire.after(async (ctx) => {
  await ctx.proxy?.close();
});

wire("every command issued in the same tick leaves in one write, in order", async ({ proxy }) => {
  const redis = await connect(proxy.url);
  try {
    await redis.send(["PING"]);
    proxy.clientChunks.length = 0;
    const replies = await Promise.all(Array.from({ length: 200 }, (_, i) => redis.send(["ECHO", String(i)])));
    assert.equal(replies, Array.from({ length: 200 }, (_, i) => String(i)));
    assert.is(proxy.clientChunks.length, 1, "one write for 200 commands");
    const writes = redis.writes;
    await Promise.all(Array.from({ length: 200 }, (_, i) => redis.send(["ECHO", String(i)])));
    assert.is(redis.writes - writes, 1, "the client itself made one socket write");
    // A lone command is written on its own, without waiting for company.
    proxy.clientChunks.length = 0;
    assert.is(await redis.send(["ECHO", "alone"]), "alone");
    assert.is(proxy.clientChunks.length, 1);
    assert.is(redis.writes - writes, 2);
  } finally {
    redis.destroy();
  }
});

wire("backpressure: commands wait for drain when the socket is full, then all resolve in order", async ({ proxy }) => {
  const redis = await connect(proxy.url);
  try {
    proxy.pause();
    const big = "x".repeat(1 << 20);
    // 16 MiB cannot fit the socket buffers while the proxy reads nothing.
    const sets = Array.from({ length: 16 }, (_, i) => redis.send(["SET", `big${i}`, big]));
    // Commands issued in a tick are written by a microtask at its end: one
    // turn of the event loop later, any write the client meant to make is made.
    await tick();
    const writes = redis.writes;
    const after = Array.from({ length: 100 }, (_, i) => redis.send(["ECHO", String(i)]));
    await tick();
    // write() returned false: the client holds later commands until drain instead of piling them on the socket.
    assert.is(redis.queued, 100);
    assert.is(redis.writes, writes);
    proxy.resume();
    assert.equal(await Promise.all(sets), Array(16).fill("OK"));
    assert.equal(await Promise.all(after), Array.from({ length: 100 }, (_, i) => String(i)));
    // The writer reuses its memory only once the socket took every byte: the values arrived whole.
    assert.ok((await redis.send(["GET", "big15"])) === big);
  } finally {
    redis.destroy();
  }
});

wire(
  "a transport reports flushed only once the kernel took every byte written, which frees the writer's memory",
  async ({ proxy }) => {
    let drained = deferred();
    const transport = await openTransport(resolveConnectOptions(proxy.url), {
      data: () => {},
      drain: () => drained.resolve(),
      close: () => {},
    });
    try {
      assert.ok(transport.write(new TextEncoder().encode("*1\r\n$4\r\nPING\r\n")));
      assert.ok(transport.flushed(), "a small write the kernel took whole");
      proxy.pause();
      // 16 MiB cannot fit the socket buffers while the proxy reads nothing.
      const big = new Uint8Array(16 << 20).fill(0x78);
      const frame = new TextEncoder().encode(`*2\r\n$4\r\nECHO\r\n$${big.length}\r\n`);
      transport.write(frame);
      assert.not.ok(transport.write(big), "the socket is full");
      assert.not.ok(transport.flushed(), "bytes the kernel has not taken are still held");
      drained = deferred();
      proxy.resume();
      await drained.promise;
      assert.ok(transport.flushed(), "after drain, every byte is out");
    } finally {
      proxy.resume();
      transport.destroy();
    }
  },
);

wire(
  "a command timeout counts from the call; a written command's late reply is discarded and the connection stays",
  async ({ proxy }) => {
    const redis = await connect(proxy.url);
    try {
      proxy.holdReplies();
      const started = Date.now();
      const e = (await rejects(
        () => redis.send(["ECHO", "late"], { timeoutMs: 50 }),
        TimeoutError,
        "Command ECHO timed out: 'timeoutMs' of 50 ms ran out",
      )) as TimeoutError;
      assert.ok(e.waitedMs >= 50 && Date.now() - started >= 50);
      assert.is(e.setting, "timeoutMs");
      assert.is(e.timeoutMs, 50);
      proxy.releaseReplies();
      // The late reply to ECHO is dropped; the next command gets its own reply.
      assert.is(await redis.send(["ECHO", "next"]), "next");
      assert.ok(redis.connected);
    } finally {
      redis.destroy();
    }
  },
);

wire("the client-wide commandTimeoutMs applies, and timeoutMs: 0 turns it off for one call", async ({ proxy }) => {
  const redis = await connect({ url: proxy.url, commandTimeoutMs: 40 });
  try {
    proxy.holdReplies();
    const e = (await rejects(
      () => redis.send(["PING"]),
      TimeoutError,
      "Command PING timed out: 'commandTimeoutMs' of 40 ms ran out",
    )) as TimeoutError;
    assert.equal([e.setting, e.timeoutMs], ["commandTimeoutMs", 40]);
    const untimed = redis.send(["ECHO", "patient"], { timeoutMs: 0 });
    // A command sent after it with the client-wide timeout times out first:
    // past that point the untimed one would have timed out too.
    await rejects(
      () => redis.send(["PING"]),
      TimeoutError,
      "Command PING timed out: 'commandTimeoutMs' of 40 ms ran out",
    );
    proxy.releaseReplies();
    assert.is(await untimed, "patient");
  } finally {
    redis.destroy();
  }
});

wire(
  "an abort rejects with signal.reason; a command aborted before its write is never written",
  async ({ server, proxy }) => {
    const redis = await connect(proxy.url);
    try {
      await redis.send(["SET", "aborted", 0]);
      const controller = new AbortController();
      const p = redis.send(["INCR", "aborted"], { signal: controller.signal });
      controller.abort(new Error("caller left"));
      await rejects(() => p, Error, "caller left");
      assert.is(await redis.send(["GET", "aborted"]), "0");
      // An already-aborted signal never issues the command.
      await rejects(
        () => redis.send(["INCR", "aborted"], { signal: AbortSignal.abort(new Error("gone")) }),
        Error,
        "gone",
      );
      // Aborting a written command: the reply is discarded, the command did run.
      proxy.holdReplies();
      const c2 = new AbortController();
      const written = redis.send(["INCR", "aborted"], { signal: c2.signal });
      await until(() => server.cli("GET", "aborted").trim() === "1");
      c2.abort(new Error("too slow"));
      await rejects(() => written, Error, "too slow");
      proxy.releaseReplies();
      assert.is(await redis.send(["GET", "aborted"]), "1");
    } finally {
      redis.destroy();
    }
  },
);

wire("a malformed reply is a ProtocolError for the commands in flight and closes the connection", async ({ proxy }) => {
  // Lazy and RESP2: no handshake reply comes first, so the offset counts from the GET's reply.
  const redis = await connect({ url: proxy.url, resp: 2, lazyConnect: true, reconnect: false });
  proxy.holdReplies();
  const p = redis.send(["GET", "x"]);
  // Its reply (nil) held at the proxy: the GET is written and waits for a reply.
  await until(() => proxy.heldText().includes("$-1\r\n"));
  proxy.inject("?garbage\r\n");
  const e = await rejects(() => p, Error, "Invalid RESP: unknown type byte 0x3f at byte offset 0");
  assert.is(e.name, "ProtocolError");
  await rejects(() => redis.send(["PING"]), ConnectionError, "The client is closed");
  assert.is(redis.connected, false);
  // The proxy is the suite's: the next test's connect() needs its handshake answered.
  proxy.releaseReplies();
});

wire("close() waits for pending replies; destroy() rejects them", async ({ proxy }) => {
  const a = await connect(proxy.url);
  proxy.holdReplies();
  const pending = a.send(["ECHO", "kept"]);
  const closed = a.close();
  await rejects(() => a.send(["PING"]), ConnectionError, "The client is closed");
  proxy.releaseReplies();
  assert.is(await pending, "kept");
  await closed;
  assert.is(a.connected, false);

  const b = await connect(proxy.url);
  proxy.holdReplies();
  const lost = b.send(["ECHO", "lost"]);
  b.destroy();
  await rejects(() => lost, ConnectionError, "The client was destroyed");
  proxy.releaseReplies();
});

wire(
  "RESP2 pub/sub: a message arriving before a SUBSCRIBE confirmation goes to listeners, not to that command",
  async ({ server, proxy }) => {
    const sub = await connect(proxy.url);
    const pub = await connect(server.url);
    try {
      const got: unknown[] = [];
      sub.onPush((p) => got.push(p));
      assert.equal(await sub.send(["SUBSCRIBE", "a"]), ["subscribe", "a", 1]);
      proxy.holdReplies();
      assert.is(await pub.send(["PUBLISH", "a", "first"]), 1);
      const second = sub.send(["SUBSCRIBE", "b"]);
      // Held in order: the message, then the confirmation of SUBSCRIBE b.
      await until(() => proxy.heldText().includes("$1\r\nb\r\n:2\r\n"));
      proxy.releaseReplies();
      assert.equal(await second, ["subscribe", "b", 2]);
      assert.equal(got, [["message", "a", "first"]]);
      assert.ok(sub.connected);
    } finally {
      sub.destroy();
      pub.destroy();
    }
  },
);

// Unsubscribing from everything is answered by one confirmation per channel
// (or pattern), not one per command: the next command's reply must not be
// taken for one of them, nor a message still on its way for a reply.
for (
  const c of [
    {
      kind: "channel",
      on: "SUBSCRIBE",
      off: "UNSUBSCRIBE",
      names: ["a", "b"],
      x: "x",
      message: ["message", "x", "hello"],
    },
    {
      kind: "pattern",
      on: "PSUBSCRIBE",
      off: "PUNSUBSCRIBE",
      names: ["a*", "b*"],
      x: "x*",
      message: ["pmessage", "x*", "x", "hello"],
    },
  ]
) {
  wire(
    `RESP2: ${c.off} from every ${c.kind} takes one confirmation per ${c.kind}; the next command gets its own reply`,
    async ({ server }) => {
      const sub = await connect(server.url);
      const pub = await connect(server.url);
      try {
        await sub.send(["SET", "k", "v"]);
        assert.equal(await sub.send([c.on, ...c.names]), [c.on.toLowerCase(), c.names[1], 2]);
        const [unsub, get] = await Promise.all([sub.send([c.off]), sub.send(["GET", "k"])]);
        // Servers confirm the channels of a set in no set order. Redis 7.0
        // keeps a client's patterns in a list and confirms them in the order
        // given; Redis 8.0 and Valkey 8.1 keep them in a hash table, as
        // channels, and confirm them in its order: the last is either one.
        const last = unsub as unknown[];
        assert.equal([last[0], last[2]], [c.off.toLowerCase(), 0]);
        const server = testedServer();
        if (c.kind === "pattern" && server.name === "redis" && server.major < 8) assert.is(last[1], c.names[1]);
        else assert.ok(c.names.includes(last[1] as string), `the last confirmation names ${String(last[1])}`);
        assert.is(get, "v");
        // A message already on its way when the last one leaves is still a message, not a reply.
        const got: unknown[] = [];
        sub.onPush((p) => got.push(p));
        await sub.send([c.on, c.x]);
        await pub.send(["PUBLISH", "x", "hello"]);
        const [bye, again] = await Promise.all([sub.send([c.off, c.x]), sub.send(["GET", "k"])]);
        assert.equal(bye, [c.off.toLowerCase(), c.x, 0]);
        assert.is(again, "v");
        assert.equal(got, [c.message]);
      } finally {
        sub.destroy();
        pub.destroy();
      }
    },
  );
}

wire(
  "close() while disconnected rejects what is queued at once instead of waiting for a reconnect",
  async ({ server }) => {
    const c = await connect({ url: server.url, offlineTimeoutMs: 0, reconnect: { minMs: 10, maxMs: 20 } });
    await server.kill();
    await until(() => !c.connected);
    const queued = c.send(["PING"]).catch((e: Error) => e);
    await c.close();
    assert.instance(await queued, ConnectionError);
    assert.match(((await queued) as Error).message, "closed while disconnected");
    await server.restart();
  },
);

wire("close() settles when the connection drops or destroy() is called while it waits", async ({ proxy }) => {
  for (const end of ["cut", "destroy"] as const) {
    const c = await connect({ url: proxy.url, reconnect: { minMs: 10, maxMs: 20 } });
    proxy.holdReplies();
    const pending = c.send(["ECHO", "x"]).catch((e: Error) => e);
    await until(() => c.writes > 0);
    const closed = c.close();
    if (end === "cut") proxy.cut();
    else c.destroy();
    await closed;
    assert.instance(await pending, ConnectionError);
    proxy.releaseReplies();
  }
});

wire(
  "an answered command leaves the deadline heap at once (its reply is not kept alive until its deadline)",
  async ({ proxy }) => {
    const c = await connect({ url: proxy.url, commandTimeoutMs: 60_000 });
    const pings = Promise.all(Array.from({ length: 1000 }, () => c.send(["PING"])));
    assert.is(watchedDeadlines(c), 1000, "every timed command is watched until it is answered");
    await pings;
    assert.is(watchedDeadlines(c), 0);
    c.destroy();
  },
);

test("replies spread over many socket reads decode intact though the client reads each into the same buffer", async ({ redis }) => {
  // On node:net the client reads into one reused 64 KiB buffer (onread): a
  // decoder that kept a view of a read across the next would see its bytes
  // overwritten. 20,000 short replies (headers are a third of their bytes)
  // and a 300,000-byte one put frame boundaries at many offsets of the reads.
  const values = Array.from({ length: 31 }, (_, n) => "abcdefghijklmnopqrstuvwxyz01234".slice(31 - n));
  values.push("0123456789".repeat(30_000));
  await Promise.all(values.map((v, i) => redis.send(["SET", `reads:${i}`, v])));
  for (let round = 0; round < 3; round++) {
    const keys = Array.from(
      { length: 20_000 },
      (_, i) => (i === 7_000 * round ? values.length - 1 : (i * 7 + round) % 31),
    );
    const got = await Promise.all(keys.map((k) => redis.send(["GET", `reads:${k}`])));
    for (let i = 0; i < keys.length; i++) {
      if (got[i] !== values[keys[i]!]) assert.unreachable(`reply ${i} differs (round ${round})`);
    }
  }
});

test("reconnect backoff: capped exponential with jitter over the upper half", () => {
  const limits = { minMs: 50, maxMs: 2000 };
  assert.equal([0, 1, 2, 5, 6, 40].map((a) => reconnectDelay(a, limits, () => 0)), [25, 50, 100, 800, 1000, 1000]);
  assert.equal([0, 1, 2, 5, 6, 40].map((a) => reconnectDelay(a, limits, () => 1)), [50, 100, 200, 1600, 2000, 2000]);
});

test.run();
wire.run();
