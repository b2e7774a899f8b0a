/**
 * Recipe 002 (lab/stampede/recipes/layered.ts) does what its article says: single
 * flight in a process, a cross-process lock whose losers without a copy
 * back off 50, 100, 200, 400, 500 ms and then fail fast, an XFetch envelope
 * refreshed early by a small draw, +-15% TTL jitter (above the configured
 * TTL too), a slot limit that sheds after its queue time, warm-up through
 * that limit, and an unconditional publish that lets an owner whose lock
 * expired overwrite a newer value. Real Redis and real lock expiry; fake
 * clocks and sleeps; held loads; no timing.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { isTimeoutError } from "../../../../resp/mod.ts";
import { layeredRecipe, OverloadedError } from "../../../../lab/stampede/recipes/layered.ts";
import { useRedis } from "../../../support/fixture.ts";
import { deferred, until } from "../../../support/wait.ts";
import { fakeTime } from "./_clock.ts";

const Layered = suite("recipe 002: single flight, lock, XFetch envelope, jitter, limit, warm-up");
const db = useRedis(Layered, { prefix: "r002", clients: 2 });

// 1 - random() close to 1: ln ~ 0, no early refresh.
const NO_EARLY = () => 0.000001;
const envelope = async (key: string) =>
  JSON.parse(String(await db.redis.send(["GET", key]))) as { v: number; value: string; delta: number; expiry: number };

Layered(
  "single flight: callers of one process share one load; another process's caller backs off, then fails fast",
  async () => {
    const key = `${db.ns()}:k`;
    const time = fakeTime();
    time.auto((ms) => ms !== 2000);
    const held = deferred<string>();
    let calls = 0;
    const compute = () => (calls++, held.promise);
    const a = layeredRecipe({ redis: db.redis, ttlMs: 10_000, now: time.now, sleep: time.sleep, random: NO_EARLY });
    const b = layeredRecipe({ redis: db.other, ttlMs: 10_000, now: time.now, sleep: time.sleep, random: NO_EARLY });
    const gets = [0, 1, 2].map(() => a.get(key, compute));
    await until(() => calls === 1);
    const error = await b.get(key, compute).then(() => undefined, (e: unknown) => e);
    assert.ok(isTimeoutError(error), String(error));
    assert.equal(time.asked.filter((ms) => ms !== 2000), [50, 100, 200, 400, 500]);
    held.resolve("v1");
    assert.equal(await Promise.all(gets), ["v1", "v1", "v1"]);
    assert.is(calls, 1);
    assert.is(a.stats().coalesced, 2);
  },
);

Layered("a caller's single-flight wait ends at its own timeout while the shared load runs on", async () => {
  const key = `${db.ns()}:k`;
  const time = fakeTime();
  const held = deferred<string>();
  const a = layeredRecipe({ redis: db.redis, ttlMs: 10_000, now: time.now, sleep: time.sleep, random: NO_EARLY });
  const first = a.get(key, () => held.promise);
  await until(() => time.held.length === 1);
  time.release((ms) => ms === 2000);
  assert.ok(isTimeoutError(await first.then(() => undefined, (e: unknown) => e)));
  held.resolve("v1");
  await until(async () => (await db.redis.send(["EXISTS", key])) === 1);
  assert.is((await envelope(key)).value, "v1");
});

Layered(
  "XFetch envelope: delta on the monotonic clock; a draw with -delta * ln(1 - r) past the expiry refreshes early",
  async () => {
    const key = `${db.ns()}:k`;
    const time = fakeTime();
    let mono = 0;
    let draw = 0.000001;
    const a = layeredRecipe({
      redis: db.redis,
      ttlMs: 10_000,
      now: time.now,
      monotonic: () => mono,
      random: () => draw,
    });
    await a.get(key, () => ((mono += 1000), Promise.resolve("v1")));
    const e = await envelope(key);
    assert.is(e.v, 1);
    assert.is(e.delta, 1000);
    time.advance(e.expiry - time.now() - 1000);
    draw = 0.5; // -1000 * ln(0.5) = 693 ms: not yet
    assert.is(await a.get(key, () => Promise.resolve("v2")), "v1");
    draw = 0.9; // -1000 * ln(0.1) = 2,303 ms: now
    assert.is(await a.get(key, () => Promise.resolve("v2")), "v2");
    assert.is(a.stats().earlyRefreshes, 1);
  },
);

Layered("TTL jitter +-15%: a high draw stores a TTL 15% above the configured one", async () => {
  const key = `${db.ns()}:k`;
  const time = fakeTime();
  const a = layeredRecipe({ redis: db.redis, ttlMs: 10_000, hardStaleMs: 0, now: time.now, random: () => 0.99999 });
  await a.get(key, () => Promise.resolve("v"));
  const e = await envelope(key);
  assert.ok(e.expiry - time.now() >= 11_499, `logical TTL ${e.expiry - time.now()}`);
  assert.ok(Number(await db.redis.send(["PTTL", key])) > 11_000);
});

Layered("the slot limit: a load that finds no slot within the queue time fails with OverloadedError", async () => {
  const time = fakeTime();
  const held = deferred<string>();
  const a = layeredRecipe({ redis: db.redis, ttlMs: 10_000, slots: 1, now: time.now, sleep: time.sleep });
  const first = a.get(`${db.ns()}:k1`, () => held.promise);
  const second = a.get(`${db.ns()}:k2`, () => Promise.resolve("v2"));
  second.catch(() => {});
  await until(() => time.held.some((h) => h.ms === 500));
  time.release((ms) => ms === 500);
  const error = await second.then(() => undefined, (e: unknown) => e);
  assert.instance(error, OverloadedError);
  assert.is(a.stats().shed, 1);
  held.resolve("v1");
  assert.is(await first, "v1");
});

Layered("warm-up loads every hot key once through the slot limit", async () => {
  const ns = db.ns();
  let running = 0;
  let peak = 0;
  const gates: (() => void)[] = [];
  const a = layeredRecipe({ redis: db.redis, ttlMs: 10_000, slots: 2 });
  const warming = a.warmup([`${ns}:a`, `${ns}:b`, `${ns}:c`], async (k) => {
    peak = Math.max(peak, ++running);
    await new Promise<void>((go) => gates.push(go));
    running--;
    return `v-${k}`;
  });
  await until(() => gates.length === 2);
  gates.shift()!();
  await until(() => gates.length === 2);
  gates.splice(0).forEach((go) => go());
  assert.is(await warming, 3);
  assert.is(peak, 2);
  assert.is((await envelope(`${ns}:c`)).value, `v-${ns}:c`);
});

Layered(
  "an owner whose lock expired overwrites the newer value another owner published (unconditional SET)",
  async () => {
    const key = `${db.ns()}:k`;
    const paused = deferred<string>();
    const a = layeredRecipe({ redis: db.redis, ttlMs: 10_000, lockTtlMs: 50, random: NO_EARLY });
    const b = layeredRecipe({ redis: db.other, ttlMs: 10_000, lockTtlMs: 50, random: NO_EARLY });
    const old = a.get(key, () => paused.promise);
    old.catch(() => {});
    await until(async () => (await db.redis.send(["EXISTS", `lock:${key}`])) === 0 && a.stats().loads === 1);
    assert.is(await b.get(key, () => Promise.resolve("newer")), "newer");
    paused.resolve("older");
    await until(async () => (await envelope(key)).value === "older");
  },
);

Layered.run();
