import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Buffer } from "node:buffer";
import { connect } from "../../../resp/mod.ts";
import { SPLIT_BYTES, SPLIT_REPLIES, SPLIT_WAITING, SplitFeed } from "../../../resp/connection/split_feed.ts";
import { useRedis } from "../../support/fixture.ts";
import type { RedisServer } from "../../support/redis_server.ts";
import { type Proxy, startProxy } from "../../support/proxy.ts";
import { until } from "../../support/wait.ts";

const unit = suite("SplitFeed");

const text = (chunks: Uint8Array[]) => Buffer.concat(chunks).toString("latin1");

/** A feed that records copies of what it is given and says each piece completed `replies` replies. */
function recorder(replies = SPLIT_REPLIES): { fed: Uint8Array[]; feed: SplitFeed } {
  const fed: Uint8Array[] = [];
  return { fed, feed: new SplitFeed((c) => (fed.push(Uint8Array.from(c)), replies)) };
}

unit("a split chunk feeds its first half now and the rest at flush, with later chunks behind it", () => {
  const { fed, feed } = recorder();
  feed.push(Buffer.from("abcdefgh"), true);
  assert.equal(fed.map((c) => text([c])), ["abcd"]);
  assert.ok(feed.waiting);
  feed.push(Buffer.from("ij"), false);
  assert.equal(fed.length, 1, "a chunk arriving while a half waits goes behind it, even one not to split");
  feed.flush();
  assert.not.ok(feed.waiting);
  assert.is(text(fed), "abcdefghij");
  feed.flush();
  assert.is(text(fed), "abcdefghij", "a second flush feeds nothing twice");
});

unit("what waits is a copy: the transport may overwrite its read buffer (a Buffer's slice would be a view)", () => {
  const { fed, feed } = recorder();
  const reused = Buffer.from("abcdefgh");
  feed.push(reused, true);
  reused.fill(0x2d);
  feed.push(reused.subarray(0, 2), false);
  reused.fill(0x2e);
  feed.flush();
  assert.is(text(fed), "abcdefgh--");
});

unit("a chunk not to split is fed whole and nothing waits", () => {
  const { fed, feed } = recorder();
  feed.push(Buffer.from("abcdefgh"), false);
  assert.equal(fed.map((c) => text([c])), ["abcdefgh"]);
  assert.not.ok(feed.waiting);
});

unit("when the first half completed fewer than SPLIT_REPLIES replies, the rest is fed at once", () => {
  const { fed, feed } = recorder(SPLIT_REPLIES - 1);
  feed.push(Buffer.from("abcdefgh"), true);
  assert.equal(fed.map((c) => text([c])), ["abcd", "efgh"]);
  assert.not.ok(feed.waiting);
});

unit.run();

const wire = suite<{ server: RedisServer; proxy: Proxy }>("Decoding a large chunk of replies in two turns");
useRedis(wire, { clients: 0 });
wire.before(async (ctx) => {
  ctx.proxy = await startProxy(ctx.server.port);
});
wire.after(async (ctx) => {
  await ctx.proxy?.close();
});

/**
 * Issue `count` GETs of a `size`-byte value with their replies held at the
 * proxy, then release them in one write (one socket read at the client). The
 * first GET's caller sends a PING as soon as its reply resolves. Returns the
 * client's socket writes before the release and when the last GET resolved.
 */
async function writesWhenLastResolves(
  proxy: Proxy,
  count: number,
  size: number,
): Promise<{ before: number; atLast: number }> {
  const redis = await connect(proxy.url);
  try {
    const value = "v".repeat(size);
    await redis.send(["SET", "split:v", value]);
    proxy.holdReplies();
    const gets = Array.from({ length: count }, () => redis.send(["GET", "split:v"]));
    let ping: Promise<unknown> | undefined;
    void gets[0]!.then(() => {
      ping = redis.send(["PING"]);
    });
    let atLast = -1;
    const last = gets[count - 1]!.then(() => {
      atLast = redis.writes;
    });
    await until(() => proxy.heldText().split(`$${size}\r\n${value}\r\n`).length - 1 === count);
    const before = redis.writes;
    proxy.releaseRepliesTogether();
    await last;
    assert.equal(await Promise.all(gets), Array(count).fill(value));
    assert.is(await ping, "PONG");
    return { before, atLast };
  } finally {
    redis.destroy();
  }
}

wire(
  "with many replies in one read, the first callers' next commands are written before the last reply is decoded",
  async ({ proxy }) => {
    // 100 replies of 71 bytes: one chunk over SPLIT_BYTES, 100 commands waiting.
    assert.ok(100 * 71 >= SPLIT_BYTES && 100 >= SPLIT_WAITING);
    const { before, atLast } = await writesWhenLastResolves(proxy, 100, 64);
    assert.is(atLast, before + 1, "the PING sent on the first reply left before the last reply resolved");
  },
);

wire("with large replies, a chunk whose first half completes few of them is decoded at once", async ({ proxy }) => {
  // 20 replies of 1 KiB: 20 commands waiting and one chunk over SPLIT_BYTES,
  // but its first half holds about 10 replies, fewer than SPLIT_REPLIES.
  assert.ok(20 >= SPLIT_WAITING && 20 * 1024 >= SPLIT_BYTES && 10 < SPLIT_REPLIES);
  const { before, atLast } = await writesWhenLastResolves(proxy, 20, 1024);
  assert.is(atLast, before, "the PING was written only after the last reply resolved: no turn in between");
});

wire("with fewer commands waiting than SPLIT_WAITING, a large chunk is decoded at once", async ({ proxy }) => {
  // A lone large reply, or a few, gain nothing from waiting a turn. Their
  // bytes just over SPLIT_BYTES, so they still arrive in one read.
  const count = SPLIT_WAITING - 1;
  const size = Math.ceil(SPLIT_BYTES / count);
  assert.ok(count * (size + 8) >= SPLIT_BYTES);
  const { before, atLast } = await writesWhenLastResolves(proxy, count, size);
  assert.is(atLast, before, "the PING was written only after the last reply resolved: no turn in between");
});

wire.run();
