import type { Socket } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, type RedisClient } from "../../resp/client.ts";
import { TimeoutError } from "../../resp/errors.ts";
import { observeOverdueChecks, type OverdueVerdict } from "../../resp/connection/debug.ts";
import { rejects, until } from "../support/assert.ts";
import { type FakeServer, startFakeServer } from "../support/fake_server.ts";

const test = suite("RedisClient: a reply that never ends after its command timed out");

test("the connection is reset once the timed-out reply is overdue, so decoding cannot grow forever", async () => {
  // Connection 0 answers with an aggregate that announces 100 million items
  // and streams them slowly for ever; later connections answer normally.
  // Lazy and RESP2: nothing but the test's commands goes on connection 0.
  const fake = await startFakeServer((command, info) =>
    info.connection === 0 && command[0] === "GET"
      ? { write: "*100000000\r\n" }
      : info.connection === 0
      ? { stream: ":1\r\n".repeat(64), count: 1_000_000 }
      : { write: "+PONG\r\n" }
  );
  const redis = await connect({ url: fake.url, resp: 2, lazyConnect: true, reconnect: { minMs: 10, maxMs: 20 } });
  try {
    const get = redis.send(["GET", "endless"], { timeoutMs: 100 });
    // The stream keeps bytes arriving on the same connection.
    void redis.send(["ECHO", "feed"]).catch(() => {});
    await rejects(() => get, TimeoutError, "Command GET timed out: 'timeoutMs' of 100 ms ran out");
    // Without the reset the first connection would stay open, decoding for ever.
    await until(() => fake.connections >= 2, 10_000);
    await until(() => redis.connected, 10_000);
    assert.is(await redis.send(["PING"]), "PONG");
  } finally {
    redis.destroy();
    await fake.close();
  }
});

/**
 * A client on a fake server whose first connection answers GETs only when
 * the test writes to `socket()`, PING at once, and HELLO with a RESP3 map;
 * `checks` collects the client's overdue verdicts until `close()`.
 */
async function heldGets(resp?: 3) {
  let socket: Socket | undefined;
  const fake = await startFakeServer((command, info) => {
    if (info.connection === 0) socket = info.socket;
    if (command[0] === "GET") return { silent: true };
    if (command[0] === "HELLO") return { write: "%1\r\n+proto\r\n:3\r\n" };
    return { write: "+PONG\r\n" };
  });
  const checks: OverdueVerdict[] = [];
  observeOverdueChecks((verdict) => checks.push(verdict));
  const redis = await connect({
    url: fake.url,
    ...(resp === undefined ? {} : { resp }),
    reconnect: { minMs: 10, maxMs: 20 },
  });
  return {
    fake,
    redis,
    checks,
    socket: () => socket!,
    async close() {
      observeOverdueChecks(undefined);
      redis.destroy();
      await fake.close();
    },
  };
}

/** A GET held by the server, then a GET behind it that times out after 50 ms: both sent, neither answered. */
async function timedOutBehindHeld({ fake, redis }: { fake: FakeServer; redis: RedisClient }) {
  const big = redis.send(["GET", "big"]);
  // Awaited by the test; handled here too, so a failed assertion before then cannot leave it unhandled.
  big.catch(() => {});
  const behind = redis.send(["GET", "behind"], { timeoutMs: 50 });
  await until(() => fake.commands.filter((c) => c[0] === "GET").length === 2);
  return { big, behind };
}

/**
 * The first overdue check leaves the connection alone, and the timed-out
 * reply, coming late but whole, is read and discarded: replies stay in
 * order and the connection is never reset.
 */
async function lateReplyReadWithoutReset(
  { fake, redis, checks, socket }: Awaited<ReturnType<typeof heldGets>>,
): Promise<void> {
  await until(() => checks.length >= 1, 10_000);
  assert.equal(checks, ["watching"], "the first check left the connection alone");
  socket().write("$4\r\nlate\r\n");
  assert.is(await redis.send(["PING"]), "PONG");
  assert.is(fake.connections, 1, "the connection was never reset");
}

test("a slow reply ahead of a timed-out command is not its growth: no reset, its late reply is read", async () => {
  const held = await heldGets();
  const { socket } = held;
  try {
    const { big, behind } = await timedOutBehindHeld(held);
    const payload = "v".repeat(300_000);
    socket().write(`$${payload.length}\r\n${payload.slice(0, 1000)}`);
    await rejects(() => behind, TimeoutError, "Command GET timed out: 'timeoutMs' of 50 ms ran out");
    // The overdue watch of "behind" started when it timed out: every byte
    // from here on belongs to the reply ahead of it, which then completes,
    // so "behind" is at the head when the check runs, its reply not begun.
    socket().write(`${payload.slice(1000)}\r\n`);
    assert.is(await big, payload);
    await lateReplyReadWithoutReset(held);
  } finally {
    await held.close();
  }
});

test("behind a slow reply, a timed-out reply that then begins and never ends is still reset", async () => {
  const held = await heldGets();
  const { fake, redis, checks, socket } = held;
  try {
    const { big, behind } = await timedOutBehindHeld(held);
    socket().write("$100000\r\n");
    await rejects(() => behind, TimeoutError, "Command GET timed out: 'timeoutMs' of 50 ms ran out");
    socket().write(`${"v".repeat(100_000)}\r\n`);
    assert.is((await big as string).length, 100_000);
    await until(() => checks.length >= 1, 10_000);
    assert.equal(checks, ["watching"]);
    // A new period has begun with "behind" at the head: its reply starts
    // now and never completes.
    socket().write("*100000000\r\n:1\r\n");
    await until(() => checks.length >= 2, 10_000);
    assert.equal(checks, ["watching", "reset"]);
    await until(() => fake.connections >= 2, 10_000);
    await until(() => redis.connected, 10_000);
    assert.is(await redis.send(["PING"]), "PONG");
  } finally {
    await held.close();
  }
});

test("RESP3 pushes (tracking invalidations) while a timed-out reply has not begun are not its growth", async () => {
  const held = await heldGets(3);
  const { fake, redis, socket } = held;
  try {
    const get = redis.send(["GET", "slow"], { timeoutMs: 50 });
    await until(() => fake.commands.some((c) => c[0] === "GET"));
    await rejects(() => get, TimeoutError, "Command GET timed out: 'timeoutMs' of 50 ms ran out");
    // Whole push frames arrive during the grace period; the GET's reply has not begun.
    socket().write(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n".repeat(3));
    await lateReplyReadWithoutReset(held);
  } finally {
    await held.close();
  }
});

test.run();
