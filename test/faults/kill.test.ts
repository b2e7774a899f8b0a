import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect } from "../../resp/client.ts";
import { isConnectionError } from "../../resp/errors.ts";
import { until } from "../support/assert.ts";
import { load, summary } from "../support/load.ts";
import { type RedisServer, startRedis } from "../support/redis-server.ts";

const test = suite<{ server: RedisServer }>("redis-server SIGKILLed under load");
test.before(async (ctx) => {
  ctx.server = await startRedis();
});
test.after(async (ctx) => {
  await ctx.server?.stop();
});

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
    await until(async () => {
      await probe();
      return failures.some((e) => isConnectionError(e) && /offlineTimeoutMs/.test((e as Error).message));
    }, 10_000, 1);
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

test.run();
