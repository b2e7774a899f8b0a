/**
 * Recipe 000 (lab/stampede/recipes/lease_publish.ts) does what its article says:
 * one lease owner per cold key, waiters polling every 10-25 ms (two Redis
 * commands per waiter per poll: the load grows with the waiters), an
 * ownership-checked publish that rejects an owner whose lease expired, a
 * TTL never above the configured one, and a waiter whose deadline passes
 * gets a TimeoutError instead of loading (the owner too: its deadline
 * covers its load, and its lease is released). Real Redis and real lease
 * expiry; fake sleeps; held loads; no timing.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Arg, RedisLike } from "../../../../resp/mod.ts";
import { isTimeoutError } from "../../../../resp/mod.ts";
import { keysFor, leasePublishRecipe } from "../../../../lab/stampede/recipes/lease_publish.ts";
import { useRedis } from "../../../support/fixture.ts";
import { deferred, until } from "../../../support/wait.ts";
import { fakeTime } from "./_clock.ts";

const LeasePublish = suite("recipe 000: lease, checked publish, recheck, poll, deadline");
const db = useRedis(LeasePublish, { prefix: "r000", clients: 2 });

function counting(redis: RedisLike) {
  const sent: string[] = [];
  return { sent, redis: { send: (c: readonly Arg[], o?: object) => (sent.push(String(c[0])), redis.send(c, o)) } };
}

LeasePublish(
  "a cold burst: one load; each waiter sends GET + SET NX per 10-25 ms poll until the value lands",
  async () => {
    const id = `${db.ns()}:k`;
    const time = fakeTime();
    const held = deferred<string>();
    let calls = 0;
    const c = counting(db.redis);
    const recipe = leasePublishRecipe({ redis: c.redis, ttlMs: 10_000, sleep: time.sleep, waitMs: 2000 });
    const gets = [0, 1, 2, 3].map(() => recipe.get(id, () => (calls++, held.promise)));
    for (let round = 1; round <= 3; round++) {
      // 3 waiters' polls plus the 4 deadlines (2000 ms), all held.
      await until(() => time.held.filter((h) => h.ms !== 2000).length === 3);
      time.release((ms) => ms !== 2000);
    }
    await until(() => time.held.filter((h) => h.ms !== 2000).length === 3);
    const polls = time.asked.filter((ms) => ms !== 2000);
    assert.ok(polls.every((ms) => ms >= 10 && ms <= 25), `poll intervals ${polls}`);
    const waiterCommands = c.sent.length - 3; // the owner's GET, SET NX, GET (recheck)
    assert.is(waiterCommands, 3 * 2 * 4, "each waiter: GET + SET NX per round, 4 rounds");
    held.resolve("v1");
    await until(async () => (await db.redis.send(["EXISTS", keysFor(id)[0]])) === 1);
    time.release((ms) => ms !== 2000);
    assert.equal(await Promise.all(gets), ["v1", "v1", "v1", "v1"]);
    assert.is(calls, 1);
  },
);

LeasePublish("an owner whose lease expired is refused at publish and returns the newer owner's value", async () => {
  const id = `${db.ns()}:k`;
  const [dataKey, leaseKey] = keysFor(id);
  const paused = deferred<string>();
  const a = leasePublishRecipe({ redis: db.redis, ttlMs: 10_000, leaseMs: 50, waitMs: 60_000 });
  const b = leasePublishRecipe({ redis: db.other, ttlMs: 10_000, leaseMs: 50, waitMs: 60_000 });
  const old = a.get(id, () => paused.promise);
  await until(async () => (await db.redis.send(["EXISTS", leaseKey])) === 0 && a.stats().loads === 1);
  assert.is(await b.get(id, () => Promise.resolve("newer")), "newer");
  paused.resolve("older");
  assert.is(await old, "newer", "the late owner read again instead of publishing");
  assert.is(await db.redis.send(["GET", dataKey]), "newer");
  assert.is(a.stats().lateRejected, 1);
});

LeasePublish("the jitter only shortens: TTL in [ttl - jitter, ttl], never above the configured one", async () => {
  for (const draw of [0, 0.99999]) {
    const id = `${db.ns()}:k`;
    const recipe = leasePublishRecipe({ redis: db.redis, ttlMs: 10_000, jitterMs: 1000, random: () => draw });
    await recipe.get(id, () => Promise.resolve("v"));
    const pttl = Number(await db.redis.send(["PTTL", keysFor(id)[0]]));
    assert.ok(pttl <= 10_000 && pttl > (draw === 0 ? 9_000 : 8_000), `draw ${draw}: PTTL ${pttl}`);
  }
});

LeasePublish(
  "a waiter whose deadline passes gets a TimeoutError and never loads; the owner's deadline releases its lease",
  async () => {
    const id = `${db.ns()}:k`;
    const time = fakeTime();
    time.auto((ms) => ms < 2000);
    const held = deferred<string>();
    let calls = 0;
    // A lease far longer than the test: only the owner's release can remove it.
    const recipe = leasePublishRecipe({
      redis: db.redis,
      ttlMs: 10_000,
      leaseMs: 600_000,
      sleep: time.sleep,
      waitMs: 2000,
    });
    const owner = recipe.get(id, () => (calls++, held.promise));
    owner.catch(() => {});
    await until(() => calls === 1);
    const waiter = recipe.get(id, () => (calls++, Promise.resolve("never")));
    waiter.catch(() => {});
    await until(() => time.held.length === 2);
    time.release((ms) => ms === 2000);
    for (const p of [owner, waiter]) {
      const error = await p.then(() => undefined, (e: unknown) => e);
      assert.ok(isTimeoutError(error), String(error));
    }
    assert.is(calls, 1, "the waiter did not load");
    await until(async () => (await db.redis.send(["EXISTS", keysFor(id)[1]])) === 0);
    assert.is(recipe.stats().timeouts, 2);
  },
);

LeasePublish(
  "no early refresh and nothing stale: a stored value is served without a load until Redis expires it, then the next caller loads",
  async () => {
    const id = `${db.ns()}:k`;
    let calls = 0;
    const load = () => Promise.resolve(`v${++calls}`);
    const recipe = leasePublishRecipe({ redis: db.redis, ttlMs: 50, jitterMs: 0 });
    assert.is(await recipe.get(id, load), "v1");
    assert.is(await recipe.get(id, load), "v1");
    assert.is(calls, 1);
    await until(async () => (await db.redis.send(["EXISTS", keysFor(id)[0]])) === 0);
    assert.is(await recipe.get(id, load), "v2", "the expired value is gone, not served stale");
    assert.is(recipe.stats().stale, 0);
  },
);

LeasePublish("bad settings are a RangeError naming them", () => {
  assert.throws(() => leasePublishRecipe({ redis: db.redis, ttlMs: 1.5 }), /'ttlMs' must be an integer/);
  assert.throws(() => leasePublishRecipe({ redis: db.redis, ttlMs: 1000, jitterMs: 1000 }), /jitter/);
  assert.throws(() => leasePublishRecipe({ redis: db.redis, ttlMs: 1000, waitMs: 0 }), /'waitMs'/);
});

LeasePublish.run();
