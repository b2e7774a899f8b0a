import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect } from "../../resp/client.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import type { Cache } from "../../strategies/cache.ts";
import { type Proxy, startProxy } from "../support/proxy.ts";
import { client, useRedis } from "../support/fixture.ts";
import { events, origin } from "../support/strategies.ts";
import { deferred, until } from "../support/wait.ts";

const Wakeup = suite("lease() wake-ups");
const db = useRedis(Wakeup, { prefix: "wake", clients: 2 });

// Runs alone: the owner's real lease (1.5 s) must outlast the waiter's way to its wait, past a
// wake-up connection that hangs for commandTimeoutMs; a CPU-bound file in the other worker
// stretched that way past the lease on 2 shared cores (twice in parallel runs, never alone).

const numsub = async (channel: string) => (await db.redis.send(["PUBSUB", "NUMSUB", channel]) as unknown[])[1];

/**
 * An owner on `other` holds the lease of `id` while `waiter` waits for it,
 * then publishes. Resolves with what the waiter got. The owner is released
 * once the waiter waits, or once the waiter gave up before ever waiting (so
 * a waiter stuck before its wait fails instead of hanging).
 */
async function waitBehindOwner(namespace: string, waiter: Cache<string>, id: string, timeoutMs: number) {
  const ev = events();
  // A lease far longer than the wait: on a busy machine the default 1.5 s ran out before the owner was
  // released, and the waiter took the lease and loaded, which is not what these tests are about.
  const owner = pipeline<string>(
    { redis: db.other, ttlMs: 5000, namespace, onEvent: ev.onEvent },
    lease({ leaseMs: 60_000 }),
  );
  const hold = deferred();
  const load = origin(() => "published");
  load.hold = hold.promise;
  const first = owner.get(id, load.load);
  await load.called();
  const before = waiter.stats().waits;
  const got = waiter.get(id, () => "never loaded", { timeoutMs }).then((v) => ({ v }), (e: unknown) => ({ e }));
  await Promise.race([until(() => waiter.stats().waits > before, 60_000), got]);
  hold.resolve();
  assert.is(await first, "published");
  await owner.close();
  return await got;
}

Wakeup(
  "a wake-up connection that stops answering costs the first waiter commandTimeoutMs, then it polls, and the subscription is retried",
  async () => {
    const namespace = db.ns();
    const proxy: Proxy = await startProxy(db.server.port);
    // No timeout of its own: a command it sends waits as long as the cache lets it.
    const push = await connect({ url: proxy.url, resp: 3 });
    let skew = 0;
    const cache = pipeline<string>(
      {
        redis: db.redis,
        ttlMs: 5000,
        namespace,
        wakeups: push,
        commandTimeoutMs: 200,
        now: () => performance.now() + skew,
      },
      lease({ waitMs: 5000 }),
    );
    try {
      proxy.holdReplies();
      const first = await waitBehindOwner(namespace, cache, "a", 3000);
      assert.equal(first, { v: "published" }, "the waiter hung on the wake-up setup");
      proxy.releaseReplies();
      assert.is(await numsub(`${namespace}:published`), 0);
      // Past the retry delay, the next miss subscribes again (in the background: it polls meanwhile).
      skew += 60_000;
      assert.is(await cache.get("b", () => "loaded"), "loaded");
      await until(async () => (await numsub(`${namespace}:published`)) === 1);
      // The jump moved the cache's estimate of the server's clock 60 s ahead too, until a read has it measured
      // again (in the background): until then the owner's fresh value below would look expired to the waiter,
      // which would load it itself. A fresh entry read as a hit says the estimate caught up.
      await until(async () => (await cache.getEntry("b", () => "loaded")).source === "redis");
      assert.equal(await waitBehindOwner(namespace, cache, "c", 3000), { v: "published" });
      await cache.close();
      assert.is(await numsub(`${namespace}:published`), 0, "close() released the retried subscription");
    } finally {
      push.destroy();
      await proxy.close();
    }
  },
);

Wakeup("a refused SUBSCRIBE falls back to polling, is undone on the connection, and is retried later", async () => {
  const namespace = db.ns();
  const channel = `${namespace}:published`;
  // Redis 7 users start without channel permissions: SUBSCRIBE fails with NOPERM.
  await db.redis.send(["ACL", "SETUSER", "nosub", "on", ">pw", "~*", "+@all", "resetchannels"]);
  const push = await connect({
    url: db.server.url,
    username: "nosub",
    password: "pw",
    resp: 3,
    commandTimeoutMs: 2000,
  });
  let skew = 0;
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 5000, namespace, wakeups: push, now: () => performance.now() + skew },
    lease(),
  );
  try {
    assert.equal(await waitBehindOwner(namespace, cache, "a", 3000), { v: "published" });
    assert.is(await numsub(channel), 0);
    // The refused channel is not restored on reconnect (a NOPERM there would fail every handshake).
    const id = await push.send(["CLIENT", "ID"]);
    const generation = push.generation;
    await db.redis.send(["CLIENT", "KILL", "ID", String(id)]);
    await until(() => push.generation > generation);
    assert.is(await push.send(["PING"]), "PONG");
    // Before the retry delay nothing is sent; after it, the next miss subscribes.
    await db.redis.send(["ACL", "SETUSER", "nosub", "allchannels"]);
    assert.is(await cache.get("b", () => "loaded"), "loaded");
    assert.is(await numsub(channel), 0, "retried before the retry delay");
    skew += 60_000;
    assert.is(await cache.get("c", () => "loaded"), "loaded");
    await until(async () => (await numsub(channel)) === 1);
    await cache.close();
    assert.is(await numsub(channel), 0);
  } finally {
    push.destroy();
    await db.redis.send(["ACL", "DELUSER", "nosub"]);
  }
});

Wakeup(
  "a wakeups client that speaks RESP2 is never subscribed on: waiters poll and it keeps answering commands",
  async () => {
    const namespace = db.ns();
    const resp2 = await client(db.server.url, 2);
    const cache = pipeline<string>({ redis: db.redis, ttlMs: 5000, namespace, wakeups: resp2 }, lease());
    try {
      assert.equal(await waitBehindOwner(namespace, cache, "a", 3000), { v: "published" });
      assert.is(await numsub(`${namespace}:published`), 0);
      assert.is(await resp2.send(["GET", "wake:unrelated"]), null, "the connection became a subscriber");
      await cache.close();
    } finally {
      resp2.destroy();
    }
  },
);

Wakeup.run();
