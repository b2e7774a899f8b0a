/**
 * send(command, { timeoutMs, bytesPerMs }): a reply that announces a large
 * payload grows its command's deadline, so a large value is not cut off by
 * a deadline set before its size was known. Against a real redis-server,
 * through a proxy that lets the reply's `$<length>` header through and holds
 * its bytes: a PING sent just after the GET, with the same timeout, times
 * out first, so the GET's own deadline has passed too when the bytes are
 * released. Whether the GET then times out or gets its value is the
 * extension at work; no clock is read.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, TimeoutError } from "../../resp/mod.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import { type Proxy, startProxy } from "../support/proxy.ts";
import type { RedisServer } from "../support/redis_server.ts";

const SIZE = 2 * 1024 * 1024;
const HEADER = `$${SIZE}\r\n`;
const TIMEOUT_MS = 1000;

const test = suite<{ server: RedisServer; proxy: Proxy }>("a large reply's deadline");
const db = useRedis(test, { clients: 1 });
test.before(async (ctx) => {
  ctx.proxy = await startProxy(ctx.server.port);
  await db.redis.send(["SET", "big", "v".repeat(SIZE)]);
});
test.after(async (ctx) => {
  await ctx.proxy?.close();
});

for (const resp of [2, 3] as const) {
  test(`RESP${resp}: with bytesPerMs, a value whose bytes arrive after the timeout is read whole`, async ({ proxy }) => {
    const redis = await connect({ url: proxy.url, resp });
    try {
      proxy.holdRepliesAfter(HEADER.length);
      // 1 byte per ms: 2 MiB grows the deadline by about 35 minutes.
      const get = redis.send(["GET", "big"], { timeoutMs: TIMEOUT_MS, bytesPerMs: 1 });
      const marker = redis.send(["PING"], { timeoutMs: TIMEOUT_MS });
      await rejects(() => marker, TimeoutError, `Command PING timed out: 'timeoutMs' of ${TIMEOUT_MS} ms ran out`);
      proxy.releaseReplies();
      assert.is(((await get) as string).length, SIZE);
      assert.ok(redis.connected);
    } finally {
      proxy.releaseReplies();
      redis.destroy();
    }
  });
}

test("without bytesPerMs the deadline stays flat: the same read times out", async ({ proxy }) => {
  const redis = await connect({ url: proxy.url });
  try {
    proxy.holdRepliesAfter(HEADER.length);
    const get = redis.send(["GET", "big"], { timeoutMs: TIMEOUT_MS });
    const marker = redis.send(["PING"], { timeoutMs: TIMEOUT_MS });
    const e = (await rejects(
      () => get,
      TimeoutError,
      `Command GET timed out: 'timeoutMs' of ${TIMEOUT_MS} ms ran out`,
    )) as TimeoutError;
    assert.equal([e.setting, e.timeoutMs], ["timeoutMs", TIMEOUT_MS]);
    await rejects(() => marker, TimeoutError);
    proxy.releaseReplies();
    // The late reply is read and dropped; the connection goes on.
    assert.is(await redis.send(["ECHO", "next"]), "next");
  } finally {
    proxy.releaseReplies();
    redis.destroy();
  }
});

test("a small reply is never announced: bytesPerMs leaves its deadline as it was", async ({ proxy }) => {
  await db.redis.send(["SET", "small", "v".repeat(1000)]);
  const redis = await connect({ url: proxy.url });
  try {
    proxy.holdRepliesAfter(`$1000\r\n`.length);
    const get = redis.send(["GET", "small"], { timeoutMs: TIMEOUT_MS, bytesPerMs: 1 });
    await rejects(() => get, TimeoutError, `Command GET timed out: 'timeoutMs' of ${TIMEOUT_MS} ms ran out`);
  } finally {
    proxy.releaseReplies();
    redis.destroy();
  }
});

test("bytesPerMs must be a positive finite number", async () => {
  for (const bad of [0, -1, Infinity, Number.NaN, "10"]) {
    await rejects(
      () => db.redis.send(["GET", "big"], { bytesPerMs: bad as number }),
      RangeError,
      `Cannot send: 'bytesPerMs' must be a positive finite number, got ${typeof bad === "number" ? bad : "string"}`,
    );
  }
});

test.run();
