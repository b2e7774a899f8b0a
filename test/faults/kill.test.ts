import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect } from "../../resp/client.ts";
import { isConnectionError, isTimeoutError } from "../../resp/errors.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { until } from "../support/assert.ts";
import { load, summary } from "../support/load.ts";
import { useRedis } from "../support/fixture.ts";
import type { RedisServer } from "../support/redis_server.ts";

const test = suite<{ server: RedisServer }>("redis-server SIGKILLed under load and restarted");
useRedis(test, { clients: 0 });

test("callers get ConnectionErrors in bounded time, no INCR runs twice, the client reconnects to the restarted server", async ({ server }) => {
  // offlineTimeoutMs bounds how long a command issued while the server is down may wait.
  const redis = await connect({ url: server.url, reconnect: { minMs: 20, maxMs: 100 }, offlineTimeoutMs: 300 });
  try {
    // The old server counts from a million; the restarted one (no persistence) from zero.
    const BASE = 1_000_000;
    await redis.send(["SET", "counter", BASE]);
    const replies: number[] = [];
    let done = false;
    const loaded = load(16, async () => replies.push((await redis.send(["INCR", "counter"])) as number), () => done);
    await until(() => replies.length >= 500);
    const generation = redis.generation;
    await server.kill();
    // While the server is down every caller settles: written commands at
    // once, queued ones when offlineTimeoutMs runs out. Seeing the latter
    // proves the waits are bounded.
    const failures: unknown[] = [];
    const probe = async () => {
      try {
        await redis.send(["INCR", "counter"]);
      } catch (e) {
        failures.push(e);
      }
    };
    await until(
      async () => {
        await probe();
        return failures.some((e) => isConnectionError(e) && /offlineTimeoutMs/.test((e as Error).message));
      },
      10_000,
      1,
    );
    await server.restart();
    await until(() => redis.connected && redis.generation > generation, 10_000);
    await until(() => replies.filter((v) => v <= BASE).length >= 500, 10_000);
    done = true;
    const { errors: loadErrors } = await loaded;
    const all = [...loadErrors, ...failures];
    assert.ok(all.length > 0, "the kill was felt");
    assert.ok(all.every(isConnectionError), `only ConnectionErrors: ${summary(all)}`);

    const fresh = replies.filter((v) => v <= BASE);
    const final = Number(await redis.send(["GET", "counter"]));
    assert.is(new Set(fresh).size, fresh.length, "no reply was delivered twice");
    // Everything the restarted server executed was acknowledged exactly once:
    // a command written to the dead server and sent again would show here.
    assert.is(final, fresh.length, "no INCR ran twice on the restarted server");
    const old = replies.filter((v) => v > BASE);
    assert.is(new Set(old).size, old.length);
  } finally {
    redis.destroy();
  }
});

test("the cache through a kill: reads fail without calling the origin, and the restarted server refills with one origin call per key", async ({ server }) => {
  const a = await connect({ url: server.url, resp: 3, reconnect: { minMs: 20, maxMs: 100 }, offlineTimeoutMs: 200 });
  const b = await connect({ url: server.url, reconnect: { minMs: 20, maxMs: 100 }, offlineTimeoutMs: 200 });
  const one = pipeline<string>({ redis: a, ttlMs: 60_000, namespace: "refill" }, coalesce(), lease());
  const two = pipeline<string>({ redis: b, ttlMs: 60_000, namespace: "refill" }, coalesce(), lease());
  try {
    const ids = Array.from({ length: 30 }, (_, i) => `key-${i}`);
    const calls = new Map<string, number>();
    const loader = ({ identity }: { identity: unknown }) => {
      calls.set(String(identity), (calls.get(String(identity)) ?? 0) + 1);
      return `value of ${String(identity)}`;
    };
    const burst = () =>
      Promise.all(ids.flatMap((id) => Array.from({ length: 10 }, (_, i) => (i % 2 ? one : two).get(id, loader))));
    await burst();
    assert.equal([...calls.values()], ids.map(() => 1));

    const generations = [a.generation, b.generation];
    await server.kill();
    // Redis unreachable: every get fails (ConnectionError or TimeoutError), none reaches the origin.
    const down = await Promise.all(
      ids.map((id, i) => (i % 2 ? one : two).get(id, loader, { timeoutMs: 500 }).then(() => "ok", (e: unknown) => e)),
    );
    assert.ok(down.every((e) => isConnectionError(e) || isTimeoutError(e)), summary(down.filter((e) => e !== "ok")));
    assert.equal([...calls.values()], ids.map(() => 1), "the origin was not called while Redis was down");

    await server.restart();
    await until(
      () => a.generation > generations[0]! && b.generation > generations[1]! && a.connected && b.connected,
      10_000,
    );
    calls.clear();
    const values = await burst();
    assert.ok(values.every((v, i) => v === `value of ${ids[Math.floor(i / 10)]}`));
    assert.equal([...calls.values()], ids.map(() => 1), "one origin call per key to refill the empty server");
  } finally {
    await Promise.all([one.close(), two.close()]);
    a.destroy();
    b.destroy();
  }
});

test.run();
