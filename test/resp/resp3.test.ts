import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, type RedisClient, RedisReplyError } from "../../resp/mod.ts";
import { useRedis } from "../support/fixture.ts";
import type { RedisServer } from "../support/redis_server.ts";
import { testedServer } from "../support/server_text.ts";

// Every RESP2 and RESP3 type, produced by a real server (HELLO 3 and DEBUG PROTOCOL).
const test = suite<{ server: RedisServer; r2: RedisClient; r3: RedisClient }>("RESP types from a real server");

const db = useRedis(test, { clients: 0 });
test.before(async (ctx) => {
  ctx.r2 = await db.client({ resp: 2 });
  ctx.r3 = await db.client({ resp: 3 });
});

test("HELLO 3 switches the connection to RESP3 and returns a map without a prototype", async ({ r3 }) => {
  const hello = (await r3.send(["HELLO", 3])) as Record<string, unknown>;
  assert.is(Object.getPrototypeOf(hello), null);
  assert.is(hello.proto, 3);
  // The server names itself: "redis", or "valkey" on Valkey.
  assert.is(hello.server, testedServer().name);
});

test("DEBUG PROTOCOL produces every RESP3 type", async ({ r3 }) => {
  const p = (kind: string) => r3.send(["DEBUG", "PROTOCOL", kind]);
  assert.is(await p("string"), "Hello World");
  assert.is(await p("integer"), 12345);
  assert.is(await p("double"), 3.141);
  assert.is(await p("bignum"), 1234567999999999999999999999999999999n);
  assert.is(await p("null"), null);
  assert.equal(await p("array"), [0, 1, 2]);
  assert.equal(await p("set"), [0, 1, 2]);
  const map = (await p("map")) as Record<string, unknown>;
  assert.is(Object.getPrototypeOf(map), null);
  assert.equal({ ...map }, { "0": false, "1": true, "2": false });
  assert.is(await p("true"), true);
  assert.is(await p("false"), false);
  assert.is(await p("verbatim"), "This is a verbatim\nstring");
});

test("an attribute is kept apart from the reply it annotates", async ({ r3 }) => {
  let attribute: unknown;
  const reply = await r3.send(["DEBUG", "PROTOCOL", "attrib"], { onAttribute: (a) => (attribute = a) });
  assert.is(reply, "Some real reply following the attribute");
  assert.equal({ ...(attribute as object) }, { "key-popularity": ["key:123", 90] });
});

test("a push frame never takes a command's reply slot", async ({ r3 }) => {
  const pushes: unknown[] = [];
  const stop = r3.onPush((p) => pushes.push(p));
  // DEBUG PROTOCOL push sends a push frame, then the command's own reply.
  const reply = await r3.send(["DEBUG", "PROTOCOL", "push"]);
  stop();
  assert.equal(pushes, [["server-cpu-usage", 42]]);
  assert.is(reply, "Some real reply following the push reply");
});

test("RESP3 pub/sub on the command connection: confirmations resolve SUBSCRIBE, messages go to listeners", async ({ server, r2 }) => {
  const sub = await connect({ url: server.url, resp: 3 });
  try {
    const got: unknown[] = [];
    sub.onPush((p) => got.push(p));
    const confirm = await sub.send(["SUBSCRIBE", "a", "b"]);
    assert.equal(confirm, ["subscribe", "b", 2]);
    // Commands keep working on a subscribed RESP3 connection, in order, among pushes.
    const [published, pong, value] = await Promise.all([
      r2.send(["PUBLISH", "a", "hi"]),
      sub.send(["PING"]),
      sub.send(["ECHO", "after"]),
    ]);
    assert.is(published, 1);
    assert.is(pong, "PONG");
    assert.is(value, "after");
    assert.equal(got, [["message", "a", "hi"]]);
  } finally {
    sub.destroy();
  }
});

test("RESP2 keeps its types: integers, nulls, nested arrays, errors in place", async ({ r2 }) => {
  await r2.send(["DEL", "l"]);
  assert.is(await r2.send(["RPUSH", "l", "a", "b"]), 2);
  assert.equal(await r2.send(["LRANGE", "l", 0, -1]), ["a", "b"]);
  assert.is(await r2.send(["GET", "missing"]), null);
  const exec = (await Promise.all([
    r2.send(["MULTI"]),
    r2.send(["SET", "s", "x"]),
    r2.send(["LPUSH", "s", "y"]),
    r2.send(["EXEC"]),
  ]))[3] as unknown[];
  assert.is(exec[0], "OK");
  assert.instance(exec[1], RedisReplyError);
  assert.is((exec[1] as RedisReplyError).code, "WRONGTYPE");
});

test("integers beyond 2^53 stay exact", async ({ r2 }) => {
  await r2.send(["SET", "big", "9223372036854775806"]);
  assert.is(await r2.send(["INCR", "big"]), 9223372036854775807n);
  await r2.send(["SET", "safe", String(2 ** 53 - 2)]);
  assert.is(await r2.send(["INCR", "safe"]), 2 ** 53 - 1);
  assert.is(await r2.send(["INCR", "safe"]), 2n ** 53n);
});

test("doubles: inf, -inf and exponents", async ({ r3 }) => {
  await r3.send(["DEL", "z"]);
  await r3.send(["ZADD", "z", "inf", "a", "-inf", "b", "1.5e10", "c"]);
  assert.is(await r3.send(["ZSCORE", "z", "a"]), Infinity);
  assert.is(await r3.send(["ZSCORE", "z", "b"]), -Infinity);
  assert.is(await r3.send(["ZSCORE", "z", "c"]), 1.5e10);
  assert.is(await r3.send(["INCRBYFLOAT", "f", "1e3"]), "1000");
});

test("binary values with \\r\\n and invalid UTF-8 round trip in buffers mode", async ({ r2, r3 }) => {
  const value = new Uint8Array([0xff, 0x0d, 0x0a, 0x00, 0xc3, 0x28, 0x0d, 0x0a, 0x24, 0x2d, 0x31]);
  for (const c of [r2, r3]) {
    await c.send(["SET", new Uint8Array([0x6b, 0xff]), value]);
    const back = await c.send(["GET", new Uint8Array([0x6b, 0xff])], { buffers: true });
    assert.instance(back, Uint8Array);
    assert.equal([...(back as Uint8Array)], [...value]);
    const nested = (await c.send(["MGET", new Uint8Array([0x6b, 0xff]), "nope"], { buffers: true })) as unknown[];
    assert.equal([...(nested[0] as Uint8Array)], [...value]);
    assert.is(nested[1], null);
  }
  await r2.send(["SET", "utf", "héllo ✓ \u{1F600}"]);
  assert.is(await r2.send(["GET", "utf"]), "héllo ✓ \u{1F600}");
  assert.is(await r2.send(["STRLEN", "utf"]), Buffer.byteLength("héllo ✓ \u{1F600}"));
});

test("buffers mode applies to one command only, even among string commands in the same write", async ({ r2 }) => {
  await r2.send(["SET", "m", "v"]);
  const [a, b, c] = await Promise.all([
    r2.send(["GET", "m"]),
    r2.send(["GET", "m"], { buffers: true }),
    r2.send(["GET", "m"]),
  ]);
  assert.is(a, "v");
  assert.equal([...(b as Uint8Array)], [0x76]);
  assert.is(c, "v");
});

test.run();
