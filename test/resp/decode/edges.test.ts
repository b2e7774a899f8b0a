/**
 * Decoder edges other clients' protocol vectors found: text
 * lines longer than a header line (Redis sends simple strings and errors of
 * any length: a Lua script's `redis.status_reply()` / `redis.error_reply()`),
 * so they are bounded by `maxBulkBytes` like any payload; what happens to an
 * open aggregate or a pending attribute at an error or the end of input;
 * decoders sharing nothing. Plain vectors are in decode.test.ts.
 */
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, type RedisClient } from "../../../resp/mod.ts";
import { RedisReplyError } from "../../../resp/errors.ts";
import { type RedisServer, startRedis } from "../../support/redis_server.ts";
import { rejects } from "../../support/assert.ts";
import { isProtocolError, ProtocolError } from "../../../resp/errors.ts";
import { b, cat, check, encodeReply, err, map, offHeap, prng, R, randomReply, recorder, refuses } from "../_vectors.ts";
import type { Reply } from "../../../resp/types.ts";
import { LINE_MAX } from "../../../resp/decode/lines.ts";

const lines = suite("Decoder: long simple strings and errors");

const LONG = 131_072;
const long = "x".repeat(LONG);
const input = cat(`+${long}\r\n`, ":1\r\n");

/** Feeds `chunks` to a fresh decoder and checks it gave the long string, then 1. */
function decodesLong(chunks: Uint8Array[], label: string): void {
  const { decoder, events } = recorder();
  for (const chunk of chunks) decoder.feed(chunk);
  // Checked by hand, not with check(): 131,075 splits, each a 128 KiB string.
  assert.is(events.length, 2, label);
  const first = events[0] as { reply: unknown };
  assert.ok(first.reply === long, `${label}: the string came back whole`);
  check([events[1]!], [R(1)], label);
}

lines("a 131,072-byte simple string decodes whole and byte by byte", () => {
  decodesLong([input], "whole");
  const bytes: Uint8Array[] = [];
  for (let i = 0; i < input.length; i++) bytes.push(input.subarray(i, i + 1));
  decodesLong(bytes, "byte by byte");
});

/**
 * Where a two-way split of `input` can change the decoder's path: the type
 * byte alone, a first part within or past the line buffer's first size (64
 * bytes) and its doublings, around a header line's limit (LINE_MAX), the CR,
 * the LF and the reply after them; with a stride of 509 (a prime, so it
 * falls on every offset modulo the buffer sizes) through the rest. Every
 * boundary of a 128 KiB line is 131,074 decodes of 128 KiB, about 17 GB
 * copied and two minutes of a shared core, for paths these already take:
 * HERDLESS_ALL_SPLITS=1 runs every one.
 */
function splits(length: number): number[] {
  if (process.env.HERDLESS_ALL_SPLITS === "1") return Array.from({ length: length - 1 }, (_, i) => i + 1);
  const at = new Set<number>();
  const span = (from: number, to: number, step = 1) => {
    for (let i = Math.max(1, from); i < Math.min(length, to); i += step) at.add(i);
  };
  span(1, 300);
  span(LINE_MAX - 300, LINE_MAX + 300);
  span(length - 300, length);
  span(1, length, 509);
  return [...at].sort((a, b) => a - b);
}

lines("a 131,072-byte simple string decodes split in two at every boundary where the decoder's path can change", () => {
  for (const i of splits(input.length)) {
    decodesLong([input.subarray(0, i), input.subarray(i)], `split at ${i}`);
  }
});

lines("a 200 KB simple error is a RedisReplyError value, split or whole", () => {
  const message = `ERR ${"e".repeat(200_000)}`;
  const bytes = cat(`-${message}\r\n+OK\r\n`);
  for (const size of [bytes.length, 1, 7, 65536, 65537, 100_000]) {
    const { decoder, events } = recorder();
    for (let at = 0; at < bytes.length; at += size) decoder.feed(bytes.subarray(at, at + size));
    check(events, [R(err(message)), R("OK")], `chunks of ${size}`);
  }
});

lines("a text line is refused one byte past maxBulkBytes, at that byte, however split", () => {
  refuses(b(`+${"a".repeat(100_001)}\r\n`), 100_001, { maxBulkBytes: 100_000 }, /simple string longer than 100000/);
  refuses(b(`-${"a".repeat(100_001)}`), 100_001, { maxBulkBytes: 100_000 }, /simple error longer than 100000/);
});

lines("a CR without its LF in a long line is refused at once, not after maxBulkBytes of buffering", () => {
  // The stream is cut long before the limit: the error must come from the
  // bytes already seen, whichever chunk brought the CR.
  const bytes = cat(`+${"a".repeat(80_000)}\rX`, "a".repeat(1000));
  refuses(bytes, 80_002, { maxBulkBytes: 1 << 30 }, /expected LF/);
});

lines("a long text line cut across chunks holds memory in proportion to the bytes received", () => {
  const MiB = 1 << 20;
  const received = 8 * MiB;
  const input = cat("+", new Uint8Array(received).fill(97));
  const before = offHeap();
  const { decoder, events } = recorder();
  for (let at = 0; at < input.length; at += 65536) decoder.feed(input.subarray(at, at + 65536));
  const grown = offHeap() - before;
  // The live line buffer is at most twice what arrived, and the buffers it
  // outgrew (not collected yet where the runtime exposes no gc) add at most
  // as much again: under 4.5x. Reserving maxBulkBytes (512 MiB) would be 64x.
  assert.ok(grown < 4.5 * received, `${(grown / MiB).toFixed(1)} MiB held after ${received / MiB} MiB received`);
  decoder.feed(b("\r\n"));
  assert.is((events[0] as { reply: string }).reply.length, received);
});

lines.run();

const edges = suite("Decoder: errors, attributes and decoders side by side");

edges("a protocol error inside an open aggregate delivers nothing of it, only the replies before", () => {
  const input = b("+before\r\n*3\r\n:1\r\n*2\r\n+a\r\n#x\r\n");
  for (const size of [input.length, 1, 5]) {
    const { decoder, events } = recorder();
    let caught: unknown;
    try {
      for (let at = 0; at < input.length; at += size) decoder.feed(input.subarray(at, at + size));
    } catch (e) {
      caught = e;
    }
    assert.ok(isProtocolError(caught), `chunks of ${size}: ${String(caught)}`);
    assert.is((caught as ProtocolError).offset, 26);
    check(events, [R("before")], `chunks of ${size}`);
  }
});

edges("an attribute that ends the input annotates the reply a later chunk brings", () => {
  const { decoder, events } = recorder();
  decoder.feed(b("|1\r\n+ttl\r\n:30\r\n"));
  assert.is(events.length, 0, "no event for an attribute alone");
  decoder.feed(b("+v\r\n"));
  decoder.feed(b("+w\r\n"));
  check(events, [R("v", map([["ttl", 30]])), R("w")]);
});

edges("integers outside int64 are a ProtocolError naming the offset; int64's limits decode", () => {
  refuses(b(":9223372036854775808\r\n"), 1, undefined, /integer outside the signed 64-bit range at byte offset 1/);
  const { decoder, events } = recorder();
  decoder.feed(b(":9223372036854775807\r\n:-9223372036854775808\r\n"));
  check(events, [R(2n ** 63n - 1n), R(-(2n ** 63n))]);
});

edges("malformed doubles name the first bad byte", () => {
  refuses(b(",3.14x\r\n"), 5, undefined, /invalid double, expected CR at byte offset 5/);
  refuses(b(",1e\r\n"), 3, undefined, /expected a digit in the exponent at byte offset 3/);
});

edges("two decoders fed interleaved chunks share no state", () => {
  // Two streams with every kind of cut state (a long text line, a bulk, a
  // streamed string, an open aggregate, a pending attribute), fed in
  // alternating chunks: each decoder must give exactly its own replies.
  const random = prng(12);
  const repliesA: Reply[] = [`${"a".repeat(70_000)}`, "x".repeat(3000), [1, ["b", null]]];
  const repliesB: Reply[] = [];
  for (let i = 0; i < 20; i++) repliesB.push(randomReply(random));
  const inputA = cat(
    `+${repliesA[0]}\r\n`,
    encodeReply(repliesA[1]!),
    encodeReply(repliesA[2]!),
    "$?\r\n;2\r\nab\r\n;0\r\n",
    "|1\r\n+k\r\n+v\r\n",
  );
  const inputB = cat(...repliesB.map(encodeReply), `-${"e".repeat(66_000)}\r\n`);
  for (const size of [1, 3, 64, 1000, 65_537]) {
    const a = recorder();
    const bee = recorder();
    let atA = 0;
    let atB = 0;
    while (atA < inputA.length || atB < inputB.length) {
      if (atA < inputA.length) a.decoder.feed(inputA.subarray(atA, atA += size));
      if (atB < inputB.length) bee.decoder.feed(inputB.subarray(atB, atB += size + 1));
    }
    check(a.events, [...repliesA.map((r) => R(r)), R("ab")], `A, chunks of ${size}`);
    check(bee.events, [...repliesB.map((r) => R(r)), R(err("e".repeat(66_000)))], `B, chunks of ${size}`);
    // A's pending attribute is still its own.
    a.decoder.feed(b(":1\r\n"));
    check([a.events.at(-1)!], [R(1, map([["k", "v"]]))], `A's attribute, chunks of ${size}`);
  }
});

edges.run();

const server = suite<{ redis: RedisServer; r2: RedisClient; r3: RedisClient }>(
  "A real server's long status and error replies",
);

server.before(async (ctx) => {
  ctx.redis = await startRedis();
  ctx.r2 = await connect({ url: ctx.redis.url });
  ctx.r3 = await connect({ url: ctx.redis.url, resp: 3 });
});
server.after(async (ctx) => {
  ctx.r2?.destroy();
  ctx.r3?.destroy();
  await ctx.redis?.stop();
});

server("EVAL redis.status_reply() of 131,072 bytes arrives whole, on the same connection", async (ctx) => {
  for (const client of [ctx.r2, ctx.r3]) {
    const id = await client.send(["CLIENT", "ID"]);
    const got = await client.send(["EVAL", "return redis.status_reply(string.rep('x', 131072))", 0]);
    assert.is(typeof got, "string");
    assert.ok(got === long, `a ${String(got).length}-byte string`);
    assert.is(await client.send(["CLIENT", "ID"]), id, "the connection was not reset");
  }
});

server("EVAL redis.error_reply() of 200 KB rejects with that error, and the connection stays usable", async (ctx) => {
  const text = `ERR ${"e".repeat(200_000)}`;
  for (const client of [ctx.r2, ctx.r3]) {
    const id = await client.send(["CLIENT", "ID"]);
    const error = await rejects(
      () => client.send(["EVAL", `return redis.error_reply('ERR ' .. string.rep('e', 200000))`, 0]),
      RedisReplyError,
      text,
    );
    assert.is(error.message.length, text.length);
    assert.ok(error.message === text, "the whole message");
    assert.is((error as RedisReplyError).code, "ERR");
    // Pipelined behind another long reply: both decode, in order.
    const [a, b2] = await Promise.all([
      client.send(["EVAL", "return redis.status_reply(string.rep('y', 70000))", 0]),
      client.send(["PING"]),
    ]);
    assert.is(a, "y".repeat(70_000));
    assert.is(b2, "PONG");
    assert.is(await client.send(["CLIENT", "ID"]), id, "the connection was not reset");
  }
});

server(
  "connect()'s maxBulkBytes bounds a status reply: ProtocolError naming the limit, then a new connection",
  async (ctx) => {
    const client = await connect({ url: ctx.redis.url, maxBulkBytes: 100_000, reconnect: { minMs: 10, maxMs: 20 } });
    try {
      const ok = await client.send(["EVAL", "return redis.status_reply(string.rep('z', 100000))", 0]);
      assert.is(ok, "z".repeat(100_000));
      await rejects(
        () => client.send(["EVAL", "return redis.status_reply(string.rep('z', 100001))", 0]),
        ProtocolError,
        /simple string longer than 100000 bytes \(maxBulkBytes\) at byte offset \d+/,
      );
      assert.is(await client.send(["PING"]), "PONG");
    } finally {
      client.destroy();
    }
  },
);

server.run();
