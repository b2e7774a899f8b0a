/**
 * Recipe 001 (lab/stampede/recipes/lock_poll.ts) does what its article says, the
 * failures included: one lock owner per cold key while the others poll 50 x
 * 50 ms; past that budget every waiter calls the origin itself; an owner
 * whose lock expired overwrites a newer value (the publish is
 * unconditional); the TTL jitter reaches 10% above the configured TTL; and
 * freshness is judged on the reader's own wall clock. Real Redis, real
 * lock expiry, fake clocks and sleeps, held loads; no timing.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { lockPollRecipe } from "../../../../lab/stampede/recipes/lock_poll.ts";
import { useRedis } from "../../../support/fixture.ts";
import { deferred, until } from "../../../support/wait.ts";
import { fakeTime } from "./_clock.ts";

const LockPoll = suite("recipe 001: SET NX lock, XFetch, jitter, poll then compute");
const db = useRedis(LockPoll, { prefix: "r001", clients: 2 });

// r close to 1: log(r) ~ 0, so XFetch never fires early and a read is fresh until `expiry` exactly.
const NO_EARLY = () => 0.999999;

LockPoll("a cold key: one caller takes the lock and loads, the others poll every 50 ms and get its value", async () => {
  const key = `${db.ns()}:k`;
  const time = fakeTime();
  const held = deferred<string>();
  let calls = 0;
  const compute = () => (calls++, held.promise);
  const a = lockPollRecipe({ redis: db.redis, ttlMs: 10_000, now: time.now, sleep: time.sleep, random: NO_EARLY });
  const b = lockPollRecipe({ redis: db.other, ttlMs: 10_000, now: time.now, sleep: time.sleep, random: NO_EARLY });
  const gets = [a, b, a, b].map((r) => r.get(key, compute));
  await until(() => time.held.length === 3);
  assert.equal(time.asked, [50, 50, 50]);
  held.resolve("v1");
  await until(async () => (await db.redis.send(["EXISTS", key])) === 1);
  time.release();
  assert.equal(await Promise.all(gets), ["v1", "v1", "v1", "v1"]);
  assert.is(calls, 1);
});

LockPoll("an origin slower than 50 x 50 ms: every waiter becomes a loader, and none of them publishes", async () => {
  const key = `${db.ns()}:k`;
  const time = fakeTime();
  time.auto((ms) => ms === 50);
  const owner = deferred<string>();
  let calls = 0;
  const compute = () => (++calls === 1 ? owner.promise : Promise.resolve(`waiter-${calls}`));
  const recipe = lockPollRecipe({ redis: db.redis, ttlMs: 10_000, now: time.now, sleep: time.sleep, random: NO_EARLY });
  const first = recipe.get(key, compute);
  await until(() => calls === 1);
  const waiters = await Promise.all([1, 2, 3, 4].map(() => recipe.get(key, compute)));
  assert.is(calls, 5, "the owner and each of the 4 waiters called the origin");
  assert.is(time.asked.length, 4 * 50);
  assert.ok(time.asked.every((ms) => ms === 50));
  assert.equal(waiters.sort(), ["waiter-2", "waiter-3", "waiter-4", "waiter-5"]);
  assert.is(await db.redis.send(["GET", key]), null, "a last-resort compute is never stored");
  owner.resolve("v1");
  assert.is(await first, "v1");
});

LockPoll(
  "an owner whose lock expired overwrites the newer value another owner published (unconditional SET)",
  async () => {
    const key = `${db.ns()}:k`;
    const paused = deferred<string>();
    const a = lockPollRecipe({ redis: db.redis, ttlMs: 10_000, lockTtlMs: 50, random: NO_EARLY });
    const b = lockPollRecipe({ redis: db.other, ttlMs: 10_000, lockTtlMs: 50, random: NO_EARLY });
    const old = a.get(key, () => paused.promise);
    // The real lock expires in Redis while A's load is held.
    await until(async () => (await db.redis.send(["EXISTS", `lock:${key}`])) === 0 && a.stats().loads === 1);
    assert.is(await b.get(key, () => Promise.resolve("newer")), "newer");
    assert.is(JSON.parse(String(await db.redis.send(["GET", key]))).value, "newer");
    paused.resolve("older");
    assert.is(await old, "older");
    assert.is(
      JSON.parse(String(await db.redis.send(["GET", key]))).value,
      "older",
      "the late owner's value replaced it",
    );
  },
);

LockPoll(
  "the TTL jitter is uniform(0.9, 1.1): a draw near 1 stores a logical TTL 10% above the configured one",
  async () => {
    const ttlMs = 10_000;
    for (const [draw, low, high] of [[0.99999, 1.0999, 1.1], [0, 0.9, 0.9]] as const) {
      const key = `${db.ns()}:k`;
      const time = fakeTime();
      const recipe = lockPollRecipe({ redis: db.redis, ttlMs, staleGraceMs: 1000, now: time.now, random: () => draw });
      await recipe.get(key, () => Promise.resolve("v"));
      const entry = JSON.parse(String(await db.redis.send(["GET", key]))) as { expiry: number };
      const logical = (entry.expiry - time.now()) / ttlMs;
      assert.ok(logical >= low && logical <= high, `draw ${draw}: logical TTL ${logical} x configured`);
      const pttl = Number(await db.redis.send(["PTTL", key]));
      assert.ok(pttl <= Math.trunc(ttlMs * high + 1000) && pttl > ttlMs * low, `physical TTL ${pttl}`);
    }
  },
);

LockPoll("freshness is the reader's wall clock: a reader 30 s ahead reloads a value written a moment ago", async () => {
  const key = `${db.ns()}:k`;
  const writer = fakeTime();
  const ahead = fakeTime(writer.now() + 30_000);
  let calls = 0;
  const compute = () => Promise.resolve(`v${++calls}`);
  const a = lockPollRecipe({ redis: db.redis, ttlMs: 10_000, now: writer.now, random: NO_EARLY });
  const b = lockPollRecipe({ redis: db.other, ttlMs: 10_000, now: ahead.now, random: NO_EARLY });
  assert.is(await a.get(key, compute), "v1");
  assert.is(await a.get(key, compute), "v1", "fresh on the writer's clock");
  assert.is(await b.get(key, compute), "v2", "expired on the reader's clock: it took the lock and loaded");
  assert.is(calls, 2);
  // B wrote expiry = its clock + TTL: 30 s in the writer's future, so A now serves it as fresh for 40 s.
  writer.advance(35_000);
  assert.is(await a.get(key, compute), "v2");
  assert.is(calls, 2);
});

LockPoll("a caller that loses the lock while holding an expired copy serves it stale instead of waiting", async () => {
  const key = `${db.ns()}:k`;
  const time = fakeTime();
  const recipe = lockPollRecipe({ redis: db.redis, ttlMs: 1000, now: time.now, sleep: time.sleep, random: NO_EARLY });
  await recipe.get(key, () => Promise.resolve("old"));
  time.advance(5000);
  await db.redis.send(["SET", `lock:${key}`, "someone-else", "PX", 60_000]);
  let calls = 0;
  assert.is(await recipe.get(key, () => (calls++, Promise.resolve("new"))), "old");
  assert.is(calls, 0);
  assert.is(time.asked.length, 0, "no poll");
  assert.is(recipe.stats().stale, 1);
});

LockPoll("XFetch: with a load that took delta, a small draw refreshes before the logical expiry", async () => {
  const key = `${db.ns()}:k`;
  const time = fakeTime();
  let draw = 0.999999;
  const recipe = lockPollRecipe({ redis: db.redis, ttlMs: 10_000, now: time.now, random: () => draw });
  // The load takes 1 s on the writer's clock: delta = 1000 ms.
  await recipe.get(key, () => (time.advance(1000), Promise.resolve("v1")));
  const entry = JSON.parse(String(await db.redis.send(["GET", key]))) as { expiry: number; delta: number };
  assert.is(entry.delta, 1000);
  time.advance(entry.expiry - time.now() - 1000); // 1 s before the logical expiry
  draw = 0.5; // -1000 * ln(0.5) = 693 ms ahead: not yet
  assert.is(await recipe.get(key, () => Promise.resolve("v2")), "v1");
  draw = 0.1; // -1000 * ln(0.1) = 2,303 ms ahead: refresh now
  assert.is(await recipe.get(key, () => Promise.resolve("v2")), "v2");
  assert.is(recipe.stats().earlyRefreshes, 1);
});

LockPoll.run();
