import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createHash } from "node:crypto";
import { type RedisClient, RedisReplyError, Script } from "../../resp/mod.ts";
import type { Arg, RedisLike, SendOptions } from "../../resp/mod.ts";
import { useRedis } from "../support/fixture.ts";
import type { RedisServer } from "../support/redis_server.ts";
import { UNKNOWN_COMMAND_IN_SCRIPT } from "../support/server_text.ts";
import { rejects, until } from "../support/assert.ts";

const test = suite<{ server: RedisServer; redis: RedisClient }>("Script");
useRedis(test, { connect: { reconnect: { minMs: 10, maxMs: 20 } } });

/** Records the command names sent through a real client. */
function recording(redis: RedisClient): RedisLike & { names: string[]; generation: number } {
  const names: string[] = [];
  return {
    names,
    get generation() {
      return redis.generation;
    },
    send(command: readonly Arg[], options?: SendOptions) {
      names.push(String(command[0]));
      return redis.send(command, options);
    },
  };
}

const lua = `return {KEYS[1], ARGV[1], redis.call("INCR", KEYS[1])}`;

test("the SHA1 is computed locally and matches the server's", async ({ redis }) => {
  const script = new Script(lua);
  assert.is(script.sha, createHash("sha1").update(lua).digest("hex"));
  assert.is(await redis.send(["SCRIPT", "LOAD", lua]), script.sha);
  await redis.send(["SCRIPT", "FLUSH"]);
});

test("the first run on a connection sends EVAL, later runs EVALSHA", async ({ redis }) => {
  const script = new Script(lua);
  const spy = recording(redis);
  assert.equal(await script.run(spy, ["s1"], ["a"]), ["s1", "a", 1]);
  assert.equal(await script.run(spy, ["s1"], ["b"]), ["s1", "b", 2]);
  assert.equal(spy.names, ["EVAL", "EVALSHA"]);
});

test("SCRIPT FLUSH between two runs: NOSCRIPT is answered by one EVAL, transparently", async ({ redis }) => {
  const script = new Script(`return redis.call("INCR", KEYS[1])`);
  const spy = recording(redis);
  assert.is(await script.run(spy, ["flushed"], []), 1);
  await redis.send(["SCRIPT", "FLUSH"]);
  assert.is(await script.run(spy, ["flushed"], []), 2, "ran exactly once despite the flush");
  assert.equal(spy.names, ["EVAL", "EVALSHA", "EVAL"]);
  assert.is(await script.run(spy, ["flushed"], []), 3);
  assert.equal(spy.names.at(-1), "EVALSHA");
});

test("a restart (new connection generation) sends EVAL again, with no NOSCRIPT round trip", async ({ server, redis }) => {
  const script = new Script(`return 7`);
  const spy = recording(redis);
  assert.is(await script.run(spy, [], []), 7);
  await server.kill();
  await server.restart();
  await until(async () => redis.connected && (await redis.send(["PING"]).catch(() => "")) === "PONG");
  assert.is(await script.run(spy, [], []), 7);
  assert.equal(spy.names, ["EVAL", "EVAL"]);
});

test("a Lua error rejects with RedisReplyError and is not retried", async ({ redis }) => {
  const script = new Script(`return redis.call("NOPE")`);
  const spy = recording(redis);
  const unknown = new RegExp(`^${UNKNOWN_COMMAND_IN_SCRIPT.source}`);
  await rejects(() => script.run(spy, [], []), RedisReplyError, unknown);
  await rejects(() => script.run(spy, [], []), RedisReplyError, unknown);
  assert.equal(spy.names, ["EVAL", "EVALSHA"]);
});

test("scripts pipeline with other commands in the same tick, replies in order", async ({ redis }) => {
  const script = new Script(`return ARGV[1]`);
  const out = await Promise.all([
    redis.send(["ECHO", "a"]),
    script.run(redis, [], ["b"]),
    redis.send(["ECHO", "c"]),
    script.run(redis, [], ["d"]),
  ]);
  assert.equal(out, ["a", "b", "c", "d"]);
});

test("an empty script is refused", async () => {
  await rejects(() => new Script(""), TypeError, "Cannot create Script: 'lua' must be a non-empty string");
});

test.run();
