import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, type RedisClient } from "../../resp/client.ts";
import { Script } from "../../resp/script.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { load, summary } from "../support/load.ts";
import { useRedis } from "../support/fixture.ts";
import type { RedisServer } from "../support/redis_server.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const test = suite<{ server: RedisServer; redis: RedisClient; admin: RedisClient }>(
  "SCRIPT FLUSH and FLUSHALL mid-load",
);
const db = useRedis(test, { connect: {} });
test.before(async (ctx) => {
  ctx.admin = await db.client({});
});

const incr = new Script("return redis.call('INCR', KEYS[1])");
const read = new Script("return redis.call('GET', KEYS[1])");

test("SCRIPT FLUSH (sync and async) under load: no caller sees NOSCRIPT, every INCR counts once", async ({ redis, admin }) => {
  const keys = Array.from({ length: 20 }, (_, i) => `flush:${i}`);
  const counted = new Map<string, number>();
  let done = false;
  const loaded = load(16, async (w, i) => {
    const key = keys[(w + i) % keys.length]!;
    if (i % 3 === 2) {
      await read.run(redis, [key], []);
      return;
    }
    await incr.run(redis, [key], []);
    counted.set(key, (counted.get(key) ?? 0) + 1);
  }, () => done);
  for (let i = 0; i < 30; i++) {
    await admin.send(["SCRIPT", "FLUSH", i % 2 === 0 ? "SYNC" : "ASYNC"]);
    await sleep(5);
  }
  done = true;
  const { ok, errors } = await loaded;
  assert.is(errors.length, 0, `no error reached a caller: ${summary(errors)}`);
  assert.ok(ok > 100, `load ran (${ok})`);
  for (const [key, n] of counted) assert.is(Number(await redis.send(["GET", key])), n, key);
});

test("FLUSHALL under load: the data goes, the scripts keep working, no caller sees an error", async ({ redis, admin }) => {
  let done = false;
  let flushes = 0;
  const loaded = load(
    16,
    (w, i) => (i % 2 === 0 ? incr.run(redis, [`all:${w}`], []) : read.run(redis, [`all:${w}`], [])),
    () => done,
  );
  for (; flushes < 20; flushes++) {
    await admin.send(["FLUSHALL", flushes % 2 === 0 ? "SYNC" : "ASYNC"]);
    await admin.send(["SCRIPT", "FLUSH"]);
    await sleep(5);
  }
  done = true;
  const { ok, errors } = await loaded;
  assert.is(errors.length, 0, `no error reached a caller: ${summary(errors)}`);
  assert.ok(ok > 100, `load ran (${ok})`);
  await admin.send(["FLUSHALL"]);
  assert.is(await incr.run(redis, ["all:0"], []), 1, "a script after the last flush runs on an empty data set");
});

test("a script cache emptied while a pipelined burst of EVALSHA is in flight: each caller gets its own reply", async ({ redis, admin }) => {
  await incr.run(redis, ["burst"], []); // the body is now known: later runs send EVALSHA
  await admin.send(["SCRIPT", "FLUSH"]);
  const replies = await Promise.all(Array.from({ length: 500 }, () => incr.run(redis, ["burst"], [])));
  assert.equal(
    [...replies].sort((a, b) => (a as number) - (b as number)),
    Array.from({ length: 500 }, (_, i) => i + 2),
  );
});

test("the cache: a flush costs one origin call per key, and no caller sees a script error", async ({ server, admin }) => {
  const a = await connect({ url: server.url, resp: 3 });
  const b = await connect(server.url);
  const one = pipeline<string>({ redis: a, ttlMs: 60_000, namespace: "flushed" }, coalesce(), lease());
  const two = pipeline<string>({ redis: b, ttlMs: 60_000, namespace: "flushed" }, coalesce(), lease());
  try {
    const ids = Array.from({ length: 25 }, (_, i) => `id-${i}`);
    const calls = new Map<string, number>();
    const loader = ({ identity }: { identity: unknown }) => {
      calls.set(String(identity), (calls.get(String(identity)) ?? 0) + 1);
      return `v:${String(identity)}`;
    };
    const burst = () =>
      Promise.all(ids.flatMap((id) => Array.from({ length: 8 }, (_, i) => (i % 2 ? one : two).get(id, loader))));
    for (let round = 1; round <= 3; round++) {
      await burst();
      assert.equal([...calls.values()], ids.map(() => round), `round ${round}: one origin call per key`);
      await admin.send(["FLUSHALL"]);
      await admin.send(["SCRIPT", "FLUSH"]);
    }

    // Flushes in the middle of a load: keys vanish with their leases, so a
    // key may be loaded by a second owner while the first still loads, but
    // never more often, and no caller sees an error.
    calls.clear();
    let done = false;
    const flushes = 10;
    const loaded = load(12, (w, i) => (w % 2 ? one : two).get(ids[(w + i) % ids.length]!, loader), () => done);
    for (let f = 0; f < flushes; f++) {
      await sleep(10);
      await admin.send(["FLUSHALL"]);
      await admin.send(["SCRIPT", "FLUSH"]);
    }
    await sleep(10);
    done = true;
    const { errors } = await loaded;
    assert.is(errors.length, 0, `no error reached a caller: ${summary(errors)}`);
    for (const [id, n] of calls) assert.ok(n <= 2 * (flushes + 1), `${id}: ${n} loads for ${flushes} flushes`);
  } finally {
    await Promise.all([one.close(), two.close()]);
    a.destroy();
    b.destroy();
  }
});

test.run();
