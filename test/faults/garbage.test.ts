import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, type RedisClient } from "../../resp/client.ts";
import { ConnectionError, isConnectionError, isProtocolError, ProtocolError, TimeoutError } from "../../resp/errors.ts";
import { rejects, until } from "../support/assert.ts";
import { type FakeAction, type FakeServer, startFakeServer } from "../support/fake_server.ts";

/** Settle `p`, or fail the test if it has not settled after `ms` (a hang detector, not a timing assertion). */
function noHang<T>(p: Promise<T>, what: string, ms = 5000): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} hung for ${ms} ms`)), ms))),
  ]);
}

async function withFake(
  handler: (command: string[], index: number, connection: number) => FakeAction,
  run: (fake: FakeServer, redis: RedisClient) => Promise<void>,
  reconnect = false,
) {
  // Lazy and RESP2: the first connection carries the test's commands and
  // nothing else, so byte offsets count from their first reply. A reconnect
  // opens with the PING that asks whether a password is needed: answered
  // here, so the handlers see only the commands of the test.
  const fake = await startFakeServer((command, info) =>
    info.connection > 0 && info.index === 0 && command.length === 1 && command[0] === "PING"
      ? { write: "+PONG\r\n" }
      : handler(command, info.index, info.connection)
  );
  const redis = await connect({
    url: fake.url,
    resp: 2,
    lazyConnect: true,
    reconnect: reconnect ? { minMs: 10, maxMs: 20 } : false,
  });
  try {
    await run(fake, redis);
  } finally {
    redis.destroy();
    await fake.close();
  }
}

const test = suite("RedisClient against a misbehaving server");

const malformed: [string, string, string][] = [
  ["plain text", "hello world\r\n", "Invalid RESP: unknown type byte 0x68 at byte offset 0"],
  ["NUL bytes", "\x00\x01\x02", "Invalid RESP: unknown type byte 0x00 at byte offset 0"],
  [
    "a bulk length beyond proto-max-bulk-len",
    "$99999999999999\r\n",
    "Invalid RESP: length exceeds the limit of 536870912 at byte offset 9",
  ],
  [
    "an array length beyond 2^32-1",
    "*99999999999\r\n",
    "Invalid RESP: length exceeds the limit of 4294967295 at byte offset 10",
  ],
  [
    "a length of 20 digits",
    "$99999999999999999999\r\n",
    "Invalid RESP: length exceeds the limit of 536870912 at byte offset 9",
  ],
  ["a negative length other than -1", "$-5\r\n", "Invalid RESP: negative length other than -1 at byte offset 2"],
  ["letters in an integer", ":12a\r\n", "Invalid RESP: expected CR at byte offset 3"],
  ["a bulk string missing its CRLF", "$3\r\nabcXY", "Invalid RESP: expected CR after the payload at byte offset 7"],
  ["a bare LF", "+OK\n", "Invalid RESP: LF without CR at byte offset 3"],
];

for (const [name, bytes, message] of malformed) {
  test(`${name}: the command rejects with ProtocolError, and so does everything behind it`, async () => {
    await withFake(() => ({ write: bytes }), async (_fake, redis) => {
      const first = redis.send(["GET", "a"]);
      const second = redis.send(["GET", "b"]);
      const e = await noHang(rejects(() => first, ProtocolError, message), name);
      assert.ok(isProtocolError(e));
      const other = await noHang(second.then(() => undefined, (err: unknown) => err), name);
      assert.ok(
        isProtocolError(other) || isConnectionError(other),
        `the pipelined command behind it fails too: ${String(other)}`,
      );
    });
  });
}

test("a reply when no command waits is a ProtocolError that closes the connection", async () => {
  await withFake(
    (_c, index) => (index === 0 ? { write: "+OK\r\n+UNSOLICITED\r\n" } : { silent: true }),
    async (_fake, redis) => {
      assert.is(await redis.send(["SET", "a", "1"]), "OK");
      await noHang(until(() => !redis.connected, 4000), "close");
      await rejects(() => redis.send(["GET", "a"]), ConnectionError, "The client is closed");
    },
  );
});

test("a frame truncated by a closed socket: ConnectionError for every command written", async () => {
  for (const cut of ["$10\r\nabc", "*3\r\n:1\r\n", "$5\r", ":12", "%2\r\n+a\r\n:1\r\n+b\r\n"]) {
    await withFake(() => ({ write: cut, close: true }), async (_fake, redis) => {
      const all = [redis.send(["GET", "a"]), redis.send(["GET", "b"]), redis.send(["GET", "c"])];
      for (const p of all) {
        await noHang(
          rejects(() => p, ConnectionError, /^Connection to redis:\/\/127\.0\.0\.1:\d+ lost before the reply arrived$/),
          JSON.stringify(cut),
        );
      }
    });
  }
});

test("a socket closed with no reply at all: ConnectionError, then the client reconnects and works", async () => {
  await withFake(
    (_c, _i, connection) => (connection === 0 ? { close: true } : { write: "+PONG\r\n" }),
    async (fake, redis) => {
      await noHang(
        rejects(
          () => redis.send(["PING"]),
          ConnectionError,
          /^Connection to redis:\/\/127\.0\.0\.1:\d+ lost before the reply arrived$/,
        ),
        "close",
      );
      await noHang(until(() => redis.connected && fake.connections === 2, 4000), "reconnect");
      assert.is(await noHang(redis.send(["PING"]), "ping"), "PONG");
    },
    true,
  );
});

test("after a ProtocolError the client reconnects, and the new connection's replies are matched correctly", async () => {
  await withFake(
    (
      command,
      _i,
      connection,
    ) => (connection === 0 ? { write: "!!garbage" } : { write: `$${command[1]!.length}\r\n${command[1]}\r\n` }),
    async (fake, redis) => {
      await noHang(
        rejects(
          () => redis.send(["ECHO", "x"]),
          ProtocolError,
          "Invalid RESP: expected a digit in length at byte offset 1",
        ),
        "garbage",
      );
      await noHang(until(() => redis.connected && fake.connections === 2, 4000), "reconnect");
      const words = Array.from({ length: 50 }, (_, i) => `w${i}`);
      assert.equal(await noHang(Promise.all(words.map((w) => redis.send(["ECHO", w]))), "echo"), words);
    },
    true,
  );
});

test("a command timeout ends a wait on a server that never answers, and a silent server never hangs the caller", async () => {
  await withFake(() => ({ silent: true }), async (_fake, redis) => {
    const e = await noHang(
      rejects(
        () => redis.send(["GET", "a"], { timeoutMs: 100 }),
        TimeoutError,
        "Command GET timed out: 'timeoutMs' of 100 ms ran out",
      ),
      "timeout",
    );
    assert.ok((e as TimeoutError).waitedMs >= 100, "not before its deadline");
  });
});

test("an endless stream of garbage: the client stops reading at the first bad byte, memory stays bounded", async () => {
  const junk = "x".repeat(1 << 20);
  await withFake(() => ({ stream: junk, count: 256 }), async (_fake, redis) => {
    const before = process.memoryUsage().rss;
    await noHang(
      rejects(() => redis.send(["GET", "a"]), ProtocolError, "Invalid RESP: unknown type byte 0x78 at byte offset 0"),
      "garbage stream",
    );
    await new Promise((r) => setTimeout(r, 200));
    const grown = process.memoryUsage().rss - before;
    assert.ok(
      grown < 128 * 2 ** 20,
      `rss grew by ${(grown / 2 ** 20).toFixed(1)} MiB while 256 MiB of garbage was offered`,
    );
  });
});

test("a huge declared length followed by a few bytes: memory follows what arrived, not what was announced", async () => {
  // 500 MB announced (under proto-max-bulk-len), 3 bytes sent, then silence.
  for (const buffers of [false, true]) {
    await withFake(() => ({ write: "$500000000\r\nabc" }), async (_fake, redis) => {
      const before = process.memoryUsage().arrayBuffers;
      await noHang(
        rejects(
          () => redis.send(["GET", "a"], { timeoutMs: 200, buffers }),
          TimeoutError,
          "Command GET timed out: 'timeoutMs' of 200 ms ran out",
        ),
        "announced bulk",
      );
      const grown = process.memoryUsage().arrayBuffers - before;
      // (Bun and Deno report no arrayBuffers figure; there this only proves nothing hangs.)
      assert.ok(
        grown < 64 * 2 ** 20,
        `buffers: ${buffers}: array buffers grew by ${(grown / 2 ** 20).toFixed(1)} MiB for 3 bytes received`,
      );
    });
  }
});

test("deep nesting beyond the decoder's depth limit is a ProtocolError, not a stack overflow", async () => {
  await withFake(() => ({ write: "*1\r\n".repeat(20_000) + ":1\r\n" }), async (_fake, redis) => {
    await noHang(
      rejects(
        () => redis.send(["GET", "a"]),
        ProtocolError,
        "Invalid RESP: aggregates nested deeper than 10000 at byte offset 40000",
      ),
      "nesting",
    );
  });
});

test.run();
