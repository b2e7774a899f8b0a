import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, type RedisClient } from "../../resp/client.ts";
import { ConnectionError, isTimeoutError, TimeoutError } from "../../resp/errors.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import type { RedisServer } from "../support/redis_server.ts";

const test = suite<{ server: RedisServer; redis: RedisClient; admin: RedisClient }>("a paused server");
const db = useRedis(test, { connect: {} });
test.before(async (ctx) => {
  ctx.admin = await db.client({});
});

/** SET then GET distinct values in one pipeline: a reply matched to the wrong command would show. */
async function repliesMatch(redis: RedisClient, tag: string): Promise<void> {
  const n = 200;
  const sets = Array.from({ length: n }, (_, i) => redis.send(["SET", `${tag}:${i}`, `v${i}`]));
  const gets = Array.from({ length: n }, (_, i) => redis.send(["GET", `${tag}:${i}`]));
  assert.equal(await Promise.all(sets), sets.map(() => "OK"));
  assert.equal(await Promise.all(gets), gets.map((_, i) => `v${i}`));
}

test("CLIENT PAUSE: commands with a timeout end with TimeoutError at their deadline; the rest complete after the pause, matched", async ({ redis, admin }) => {
  await admin.send(["CLIENT", "PAUSE", 1000, "ALL"]);
  const patient = redis.send(["SET", "after-pause", "yes"]);
  const timed = Array.from(
    { length: 20 },
    (_, i) => redis.send(["GET", `k${i}`], { timeoutMs: 50 + i * 5 }).then(() => undefined, (e: unknown) => e),
  );
  const outcomes = await Promise.all(timed);
  outcomes.forEach((e, i) => {
    assert.ok(isTimeoutError(e), `call ${i} timed out: ${String(e)}`);
    assert.ok((e as TimeoutError).waitedMs >= 50 + i * 5, `call ${i} did not give up before its deadline`);
  });
  assert.is(await patient, "OK", "a command without a timeout waits the pause out");
  await repliesMatch(redis, "pause");
});

test("SIGSTOP: timed commands end with TimeoutError; connect() to the frozen server gives up; after SIGCONT late replies are discarded", async ({ server, redis }) => {
  await repliesMatch(redis, "before-stop");
  server.signal("SIGSTOP");
  try {
    const e = await rejects(
      () => redis.send(["GET", "x"], { timeoutMs: 100 }),
      TimeoutError,
      "Command GET timed out: 'timeoutMs' of 100 ms ran out",
    );
    assert.ok((e as TimeoutError).waitedMs >= 100);
    const many = await Promise.all(
      Array.from(
        { length: 50 },
        () => redis.send(["INCR", "stopped"], { timeoutMs: 80 }).then(() => "ok", (err: unknown) => err),
      ),
    );
    assert.ok(many.every(isTimeoutError), "every timed call timed out");
    // The kernel still accepts the TCP connection; the handshake is what never ends.
    const failure = await rejects(
      () => connect({ url: server.url, resp: 3, connectTimeoutMs: 200, reconnect: false }),
      ConnectionError,
      /^Cannot connect to redis:\/\/127\.0\.0\.1:\d+: the handshake failed \(The handshake timed out: 'connectTimeoutMs' of 200 ms ran out\)$/,
    );
    assert.ok(isTimeoutError(failure.cause), `caused by a TimeoutError: ${String(failure.cause)}`);
  } finally {
    server.signal("SIGCONT");
  }
  // The INCRs were written before the timeouts: they ran, and their late replies went nowhere.
  assert.is(await redis.send(["GET", "stopped"]), "50");
  await repliesMatch(redis, "after-stop");
});

test("the cache on a paused server: a read that cannot finish ends with TimeoutError, and the origin is never called", async ({ server, admin }) => {
  const redis = await connect(server.url);
  const cache = pipeline<string>({ redis, ttlMs: 60_000, namespace: "paused" }, lease());
  try {
    let calls = 0;
    await admin.send(["CLIENT", "PAUSE", 600, "ALL"]);
    const e = await rejects(
      () => cache.get("cold", () => (calls++, "v"), { timeoutMs: 100 }),
      TimeoutError,
      /^The get of paused:\{[\w-]+\}:data timed out: 'timeoutMs' of 100 ms ran out$/,
    );
    assert.ok((e as TimeoutError).waitedMs >= 100, "not before its deadline");
    assert.is(calls, 0);
    assert.is(await admin.send(["PING"]), "PONG", "the pause is over");
    assert.is(await cache.get("cold", () => (calls++, "v")), "v");
    assert.is(calls, 1);
  } finally {
    await cache.close();
    redis.destroy();
  }
});

test("the cache on a paused server, a call's timeoutMs longer than commandTimeoutMs: the command's deadline runs out first, named", async ({ server, admin }) => {
  const redis = await connect(server.url);
  const cache = pipeline<string>({ redis, ttlMs: 60_000, namespace: "named", commandTimeoutMs: 150 });
  try {
    // Read once so tracking and the clock are settled: the stalled read is then one GET.
    assert.is(await cache.get("warm", () => "v"), "v");
    await admin.send(["CLIENT", "PAUSE", 800, "ALL"]);
    const messages = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const e = (await rejects(
        () => cache.get(`cold${i}`, () => "v", { timeoutMs: 2_000 }),
        TimeoutError,
      )) as TimeoutError;
      // The setting that ran out, with its configured value: not the call's timeoutMs, and no measured time.
      assert.equal([e.setting, e.timeoutMs], ["commandTimeoutMs", 150]);
      assert.ok(e.waitedMs >= 150, "not before its deadline");
      messages.add(e.message);
    }
    // One failure, one message: logs group it.
    assert.equal([...messages], ["Command GET timed out: 'commandTimeoutMs' of 150 ms ran out"]);
    assert.is(await admin.send(["PING"]), "PONG", "the pause is over");
  } finally {
    await cache.close();
    redis.destroy();
  }
});

test("the cache, SIGSTOP while an owner loads: waiters end with TimeoutError at their deadline, none falls through to the origin", async ({ server }) => {
  const a = await connect({ url: server.url, resp: 3 });
  const b = await connect(server.url);
  const one = pipeline<string>({ redis: a, ttlMs: 60_000, namespace: "stopped" }, lease({ waitMs: 10_000 }));
  const two = pipeline<string>({ redis: b, ttlMs: 60_000, namespace: "stopped" }, lease({ waitMs: 10_000 }));
  let calls = 0;
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let started!: () => void;
  const loading = new Promise<void>((r) => (started = r));
  const loader = async () => {
    calls++;
    started();
    await held;
    return "v";
  };
  try {
    const owner = one.get("k", loader, { timeoutMs: 20_000 });
    await loading;
    server.signal("SIGSTOP");
    let waiters: unknown[];
    try {
      waiters = await Promise.all(
        Array.from(
          { length: 10 },
          (_, i) =>
            (i % 2 ? one : two).get("k", loader, { timeoutMs: 150 + i * 10 }).then(
              () => "value",
              (err: unknown) => err,
            ),
        ),
      );
    } finally {
      server.signal("SIGCONT");
    }
    waiters.forEach((w, i) => {
      assert.ok(isTimeoutError(w), `waiter ${i}: ${String(w)}`);
      assert.ok((w as TimeoutError).waitedMs >= 150 + i * 10, `waiter ${i} did not give up before its deadline`);
    });
    assert.is(calls, 1, "no waiter called the origin");
    release();
    assert.is(await owner, "v");
    assert.is(await two.get("k", loader), "v");
    assert.is(calls, 1);
  } finally {
    server.signal("SIGCONT");
    release();
    await Promise.all([one.close(), two.close()]);
    a.destroy();
    b.destroy();
  }
});

test.run();
