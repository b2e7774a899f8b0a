/**
 * The contract every adapter keeps, as one uvu suite per adapter function
 * with the same tests for each flavor (client package and configuration):
 * reply shapes, server errors, buffers, timeoutMs against a paused server,
 * abort, Script.run through NOSCRIPT, and a full pipeline over the adapter.
 * Each suite gets its own redis-server from `useRedis()`.
 */
import { getEventListeners } from "node:events";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { pendingDeadlines } from "../../resp/adapters/common.ts";
import type { RedisClient } from "../../resp/client.ts";
import { isRedisReplyError, isTimeoutError, RedisReplyError, TimeoutError } from "../../resp/errors.ts";
import { Script } from "../../resp/script.ts";
import type { Reply } from "../../resp/types.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { useRedis } from "../support/fixture.ts";
import { rejects } from "../support/assert.ts";
import { events, origin } from "../support/strategies.ts";
import { deferred } from "../support/wait.ts";
import type { Flavor, Opened } from "./_flavors.ts";

const bytes = (...b: number[]) => new Uint8Array(b);

// Bytes as plain arrays, so a Buffer and a Uint8Array with the same content compare equal.
function plain(value: unknown): unknown {
  if (value instanceof Uint8Array) return { bytes: Array.from(value) };
  if (Array.isArray(value)) return value.map(plain);
  return value;
}

function same(actual: unknown, expected: unknown, message?: string): void {
  assert.equal(plain(actual), plain(expected), message);
}

// Every Uint8Array in `value` owns its memory: not a view that would keep a
// client's larger socket chunk alive for as long as the value is kept.
function owned(value: unknown): boolean {
  if (value instanceof Uint8Array) return value.byteOffset === 0 && value.byteLength === value.buffer.byteLength;
  return Array.isArray(value) ? value.every(owned) : true;
}

/** Register the contract suite `title` (e.g. "fromIoredis()") over `flavors`. */
export function contract(title: string, flavors: readonly Flavor[]): void {
  const Suite = suite(title);
  let pushClient: RedisClient;
  const open: Opened[] = [];
  const clients = new Map<string, Opened>();

  // Registered before the fixture's, so it runs before the server stops (a
  // client package may wait for its QUIT reply). The fixture resumes a
  // server a failed test left paused.
  Suite.after(async () => {
    await Promise.allSettled(open.map((o) => o.close()));
  });
  const db = useRedis(Suite, { prefix: "adapt", connect: {} });
  Suite.before(async () => {
    pushClient = await db.client({ resp: 3 });
    for (const flavor of flavors) {
      const o = await flavor.open(db.url);
      open.push(o);
      clients.set(flavor.name, o);
    }
  });

  // Opens a second client of the flavor for the length of `body`.
  async function withSecond<T>(flavor: Flavor, body: (second: Opened) => Promise<T>): Promise<T> {
    const second = await flavor.open(db.server.url);
    try {
      return await body(second);
    } finally {
      await second.close();
    }
  }

  for (const flavor of flavors) {
    const redis = () => clients.get(flavor.name)!.redis;
    const test = (name: string, fn: () => Promise<void>) => Suite(`${flavor.name}: ${name}`, fn);

    test("strings, integers, nil, nested arrays, maps and binary values come back as our client decodes them", async () => {
      const r = redis();
      const k = db.ns();
      assert.is(await r.send(["SET", `${k}:s`, "héllo ✓", "PX", 60_000]), "OK");
      assert.is(await r.send(["GET", `${k}:s`]), "héllo ✓");
      assert.is(await r.send(["SET", `${k}:empty`, ""]), "OK");
      assert.is(await r.send(["GET", `${k}:empty`]), "");
      assert.is(await r.send(["GET", `${k}:missing`]), null);
      assert.is(await r.send(["INCR", `${k}:n`]), 1);
      assert.is(await r.send(["INCRBY", `${k}:n`, -5]), -4);
      // An integer beyond 2^53 goes out with its exact digits, as our encoder writes it.
      assert.is(await r.send(["SET", `${k}:big`, 2 ** 60]), "OK");
      assert.is(await db.redis.send(["GET", `${k}:big`]), "1152921504606846976");
      assert.is(await r.send(["RPUSH", `${k}:l`, "a", "", "c"]), 3);
      assert.equal(await r.send(["LRANGE", `${k}:l`, 0, -1]), ["a", "", "c"]);
      assert.equal(await r.send(["EVAL", "return {1, 'two', {3, false}, {}}", 0]), [1, "two", [3, null], []]);
      assert.equal(await r.send(["TIME"]).then((t) => Array.isArray(t) && t.length), 2);
      // Binary safe both ways: CR LF, 0xff, NUL.
      const value = bytes(0, 255, 13, 10, 0x80, 1);
      assert.is(await r.send(["SET", `${k}:bin`, value]), "OK");
      same(await db.redis.send(["GET", `${k}:bin`], { buffers: true }), value);
      // A map, with a key that must stay a key.
      await r.send(["HSET", `${k}:h`, "__proto__", "x", "b", "2"]);
      const map = await r.send(["HGETALL", `${k}:h`]);
      if (flavor.mapsAsObjects) {
        assert.is(Object.getPrototypeOf(map), null);
        assert.equal(Object.entries(map as object).sort(), [["__proto__", "x"], ["b", "2"]]);
      } else {
        assert.equal(map, ["__proto__", "x", "b", "2"]);
      }
    });

    test("a server error rejects with RedisReplyError and its code; one inside an array is in place", async () => {
      const r = redis();
      const k = db.ns();
      await r.send(["HSET", k, "f", "v"]);
      const e = await rejects(() => r.send(["GET", k]), RedisReplyError, /^WRONGTYPE Operation against a key/);
      assert.ok(isRedisReplyError(e));
      assert.is((e as RedisReplyError).code, "WRONGTYPE");
      assert.ok(e.cause instanceof Error, "the client's own error is kept as the cause");
      const unknown = await rejects(() => r.send(["NOSUCHCOMMAND", "x"]), RedisReplyError, /^ERR unknown command/);
      assert.is((unknown as RedisReplyError).code, "ERR");
      // A Lua table {err=...} inside an array: an error reply inside an aggregate.
      const mixed = await r.send(["EVAL", "return {1, redis.pcall('INCR', KEYS[1]), 'after'}", 1, k]) as Reply[];
      assert.is(mixed.length, 3);
      assert.is(mixed[0], 1);
      assert.ok(isRedisReplyError(mixed[1]), `expected a RedisReplyError in place, got ${String(mixed[1])}`);
      assert.is((mixed[1] as RedisReplyError).code, "WRONGTYPE");
      assert.is(mixed[2], "after");
    });

    test("bad arguments reject with our client's TypeError, and nothing is sent", async () => {
      const r = redis();
      await rejects(() => r.send([]), TypeError, "Cannot send: 'command' must be a non-empty array");
      await rejects(
        () => r.send(["SET", "k", Number.NaN]),
        TypeError,
        "Cannot send: argument 2 must be a string, finite number or Uint8Array, got NaN",
      );
      await rejects(
        () => r.send(["SET", "k", null as never]),
        TypeError,
        "Cannot send: argument 2 must be a string, finite number or Uint8Array, got null",
      );
      assert.is(await db.redis.send(["EXISTS", "k"]), 0);
    });

    if (flavor.buffersEverywhere) {
      test("buffers: true returns every bulk string of the reply as bytes", async () => {
        const r = redis();
        const k = db.ns();
        await db.redis.send(["RPUSH", k, "a", bytes(0xff, 0), ""]);
        const list = await r.send(["LRANGE", k, 0, -1], { buffers: true }) as Reply[];
        assert.ok(list.every((v) => v instanceof Uint8Array), "every element is bytes");
        same(list, [bytes(97), bytes(0xff, 0), bytes()]);
        assert.ok(owned(list), "bytes own their memory");
        assert.equal(await r.send(["GET", `${k}:missing`], { buffers: true }), null);
        assert.is(await r.send(["LLEN", k], { buffers: true }), 3);
        const nested = await r.send(["EVAL", "return {KEYS[1], {ARGV[1]}}", 1, "k", bytes(1, 2)], { buffers: true });
        same(nested, [bytes(107), [bytes(1, 2)]]);
        assert.ok(owned(nested), "bytes own their memory");
      });
    } else {
      test("buffers: true is honoured for GET and refused (TypeError, nothing sent) elsewhere", async () => {
        const r = redis();
        const k = db.ns();
        await db.redis.send(["SET", k, bytes(0xff, 0, 13, 10)]);
        const got = await r.send(["GET", k], { buffers: true });
        same(got, bytes(0xff, 0, 13, 10));
        assert.ok(owned(got), "bytes own their memory");
        assert.equal(await r.send(["GET", `${k}:missing`], { buffers: true }), null);
        await rejects(
          () => r.send(["INCR", `${k}:n`], { buffers: true }),
          TypeError,
          "Cannot send INCR with buffers: Bun's RedisClient returns bytes only for GET (getBuffer); its send() decodes every reply to strings",
        );
        assert.is(await db.redis.send(["EXISTS", `${k}:n`]), 0);
      });
    }

    test("timeoutMs rejects with TimeoutError while the server is paused; the client works again after", async () => {
      const r = redis();
      assert.is(await r.send(["PING"], { timeoutMs: 1000 }), "PONG");
      db.server.signal("SIGSTOP");
      let e: Error;
      try {
        e = await rejects(
          () => r.send(["GET", "k"], { timeoutMs: 100 }),
          TimeoutError,
          "Command GET timed out: 'timeoutMs' of 100 ms ran out",
        );
      } finally {
        db.server.signal("SIGCONT");
      }
      assert.ok(isTimeoutError(e));
      assert.ok((e as TimeoutError).waitedMs >= 100, `waited ${(e as TimeoutError).waitedMs} ms`);
      // The late reply is dropped; the connection answers the next command.
      assert.is(await r.send(["PING"], { timeoutMs: 5000 }), "PONG");
      assert.is(pendingDeadlines(), 0, "no deadline is left in the heap");
    });

    test("an abort rejects with signal.reason, an aborted signal sends nothing, and no listener is left behind", async () => {
      const r = redis();
      const k = db.ns();
      const gone = new Error("caller left");
      await rejects(() => r.send(["INCR", k], { signal: AbortSignal.abort(gone) }), Error, "caller left");
      assert.is(await db.redis.send(["GET", k]), null, "a command whose signal was already aborted is never sent");

      db.server.signal("SIGSTOP");
      const controller = new AbortController();
      const reason = new Error("stop waiting");
      let caught: unknown;
      try {
        const pending = r.send(["GET", k], { signal: controller.signal, timeoutMs: 10_000 }).catch((e) => e);
        controller.abort(reason);
        caught = await pending;
      } finally {
        db.server.signal("SIGCONT");
      }
      assert.is(caught, reason, "rejected with the very reason given to abort()");
      assert.is(getEventListeners(controller.signal, "abort").length, 0);

      const kept = new AbortController();
      assert.is(await r.send(["PING"], { signal: kept.signal, timeoutMs: 5000 }), "PONG");
      assert.is(getEventListeners(kept.signal, "abort").length, 0, "a settled command leaves no listener");
      assert.is(pendingDeadlines(), 0);
    });

    test("Script.run sends EVAL, then EVALSHA, and falls back to EVAL on NOSCRIPT after SCRIPT FLUSH", async () => {
      const r = redis();
      const k = db.ns();
      const script = new Script(`return redis.call('INCRBY', KEYS[1], ARGV[1]) -- ${k}`);
      await db.redis.send(["CONFIG", "RESETSTAT"]);
      assert.is(await script.run(r, [k], [2]), 2);
      assert.is(await script.run(r, [k], [3]), 5);
      await db.redis.send(["SCRIPT", "FLUSH"]);
      assert.is(await script.run(r, [k], [4]), 9);
      const stats = String(await db.redis.send(["INFO", "commandstats"]));
      const stat = (command: string, field: string) =>
        Number(stats.match(new RegExp(`cmdstat_${command}:[^\\r\\n]*?\\b${field}=(\\d+)`))?.[1] ?? 0);
      // `calls` counts failed calls too; `rejected_calls` those refused before running.
      const calls = (command: string) => ({
        ok: stat(command, "calls") - stat(command, "failed_calls"),
        refused: stat(command, "rejected_calls") + stat(command, "failed_calls"),
      });
      assert.equal(calls("eval"), { ok: 2, refused: 0 }, "the first run and the fallback");
      assert.equal(calls("evalsha"), { ok: 1, refused: 1 }, "one EVALSHA ran, one was refused with NOSCRIPT");
    });

    test("a cold burst of 50 gets through two caches over two clients costs 1 origin call (waiters poll)", async () => {
      await withSecond(flavor, async (second) => {
        const namespace = db.ns();
        const ev = events();
        const one = pipeline({ redis: redis(), ttlMs: 5000, namespace, onEvent: ev.onEvent }, coalesce(), lease());
        const two = pipeline({ redis: second.redis, ttlMs: 5000, namespace, onEvent: ev.onEvent }, coalesce(), lease());
        const hold = deferred();
        const o = origin((call) => ({ value: `v${call}` }));
        o.hold = hold.promise;
        const calls = Array.from({ length: 50 }, (_, i) => (i % 2 ? one : two).get("hot", o.load));
        // Hold the origin until the other 49 callers are parked: joined
        // in-process (coalesced) or waiting on the other client's lease.
        await ev.reach(["coalesced", "wait"], 49);
        assert.ok(ev.count("wait") >= 1, "a caller of the other cache waited on the lease");
        hold.resolve();
        const values = await Promise.all(calls);
        assert.is(o.calls, 1);
        assert.ok(values.every((v) => (v as { value: string }).value === "v1"), "everyone got the one load");
        assert.is(one.stats().loads + two.stats().loads, 1);
        assert.is(one.stats().timeouts + two.stats().timeouts, 0);
        // A hit now, then invalidate (DEL + PUBLISH) and the next get loads again.
        assert.equal(await two.get("hot", o.load), { value: "v1" });
        await one.invalidate("hot");
        assert.equal(await two.get("hot", o.load), { value: "v2" });
        assert.is(o.calls, 2);
        await Promise.all([one.close(), two.close()]);
      });
    });

    test("with a herdless RESP3 client as `wakeups`, a waiter is woken by push, not by its poll", async () => {
      await withSecond(flavor, async (second) => {
        const namespace = db.ns();
        const ev = events();
        const owner = pipeline({ redis: second.redis, ttlMs: 5000, namespace }, lease());
        // Its first look again would come after 30 s at the earliest, past its
        // 4 s deadline: only a push wake-up can end this wait in time.
        const waiter = pipeline(
          { redis: redis(), ttlMs: 5000, namespace, wakeups: pushClient, onEvent: ev.onEvent },
          lease({ pollMs: 60_000, waitMs: 5000 }),
        );
        const hold = deferred();
        const load = origin(() => "published");
        load.hold = hold.promise;
        const first = owner.get("k", load.load);
        await load.called();
        const never = origin(() => "never");
        const waiting = waiter.get("k", never.load, { timeoutMs: 4000 });
        await ev.reach("wait", 1);
        hold.resolve();
        assert.is(await waiting, "published");
        assert.is(await first, "published");
        assert.equal([never.calls, waiter.stats().waits, waiter.stats().timeouts], [0, 1, 0]);
        await Promise.all([owner.close(), waiter.close()]);
      });
    });

    test("the bytes codec round-trips binary values through the adapter", async () => {
      const namespace = db.ns();
      const value = bytes(0, 0xff, 13, 10, 0x80, 7);
      const writer = pipeline<Uint8Array>({ redis: redis(), ttlMs: 5000, namespace, codec: "bytes" }, lease());
      same(await writer.get("bin", () => value), value);
      const reader = pipeline<Uint8Array>({ redis: redis(), ttlMs: 5000, namespace, codec: "bytes" }, lease());
      const o = origin(() => bytes(9));
      same(await reader.get("bin", o.load), value);
      assert.is(o.calls, 0, "a hit, read as bytes");
      await Promise.all([writer.close(), reader.close()]);
    });
  }

  Suite.run();
}
