/**
 * The strategies on a Redis Cluster (3 primaries, 3 replicas): lease, xfetch
 * and swr through two cluster clients standing for two processes, and the
 * lease across a manual failover. The strategies run unchanged: the cluster
 * client is just another `RedisLike`.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { type ClusterClient, keySlot } from "../../resp/cluster/client.ts";
import { isConnectionError, isTimeoutError } from "../../resp/errors.ts";
import type { CacheEvent } from "../../strategies/events.ts";
import type { Strategy } from "../../strategies/contract.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import type { Cache } from "../../strategies/cache.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { swr } from "../../strategies/swr.ts";
import { xfetch } from "../../strategies/xfetch.ts";
import { load, summary } from "../support/load.ts";
import { type ClusterContext, twoProcessCluster, type TwoProcesses } from "../support/fixture.ts";
import { events, origin, spread } from "../support/strategies.ts";
import { deferred, until } from "../support/wait.ts";

/** The shared cluster and two clients, as two processes would have (see {@linkcode TwoProcesses}). */
type Ctx = ClusterContext<TwoProcesses>;

const shared = twoProcessCluster("cc", "herdless-cache-test");
const ns = shared.ns;

/** The same cache in both "processes". */
function caches<T>(
  ctx: Ctx,
  namespace: string,
  onEvent: (e: CacheEvent) => void,
  make: () => Strategy[],
  ttlMs = 10_000,
  commandTimeoutMs = 1000,
): [Cache<T>, Cache<T>] {
  return [
    pipeline<T>({ redis: ctx.a, ttlMs, namespace, onEvent, commandTimeoutMs }, ...make()),
    pipeline<T>({ redis: ctx.b, ttlMs, namespace, onEvent, commandTimeoutMs }, ...make()),
  ];
}

const Lease = suite<Ctx>("lease() on a cluster");
shared.use(Lease);

Lease("data and lease keys share a slot, so the publish script runs on one node", async (ctx) => {
  const [one] = caches(ctx, ns(), () => {}, () => [lease()]);
  for (const id of ["x", ["tenant", 7, "en"] as const]) {
    const { data, lease: l } = one.keys(id as string);
    assert.is(keySlot(data), keySlot(l), `${data} and ${l}`);
  }
  await one.close();
});

Lease("a cold burst through two cluster clients costs one origin call per key, on every primary", async (ctx) => {
  const ev = events();
  const [one, two] = caches<string>(ctx, ns(), ev.onEvent, () => [lease({ waitMs: 10_000 })]);
  const ids = spread(ctx.cluster, one as Cache<unknown>, 3);
  const perKey = 12;
  const calls = new Map<string, number>();
  const hold = deferred();
  const o = origin(() => "v");
  const loadFor = (id: string) => async (c: { signal: AbortSignal }) => {
    calls.set(id, (calls.get(id) ?? 0) + 1);
    return `${await o.load(c)}:${id}`;
  };
  o.hold = hold.promise;
  const gets = ids.flatMap((id) => Array.from({ length: perKey }, (_, i) => (i % 2 ? one : two).get(id, loadFor(id))));
  // Hold every owner's load until every other caller waits on its lease.
  await ev.reach("wait", ids.length * (perKey - 1));
  hold.resolve();
  const values = await Promise.all(gets);
  assert.equal(values, ids.flatMap((id) => Array.from({ length: perKey }, () => `v:${id}`)));
  assert.equal([...calls.values()], ids.map(() => 1), "one origin call per key");
  assert.is(one.stats().leasesWon + two.stats().leasesWon, ids.length);
  await Promise.all([one.close(), two.close()]);
});

Lease(
  "with coalesce() in front, each client sends one lease attempt per key; waiters wake through tracking, no subscription",
  async (ctx) => {
    const ev = events();
    const [one, two] = caches<string>(ctx, ns(), ev.onEvent, () => [coalesce(), lease({ waitMs: 10_000 })]);
    const hold = deferred();
    const o = origin(() => "hot");
    o.hold = hold.promise;
    const gets = Array.from({ length: 60 }, (_, i) => (i % 2 ? one : two).get("hot", o.load));
    // 29 join in-process on each side; the other side's single caller waits on the lease.
    await ev.reach(["coalesced", "wait"], 59);
    hold.resolve();
    assert.ok((await Promise.all(gets)).every((v) => v === "hot"));
    assert.is(o.calls, 1);
    // The RESP3 cluster client's node connections track their reads; nothing subscribes.
    let subscribers = 0;
    let tracking = 0;
    for (const node of ctx.cluster.nodes) {
      const lines = ctx.cluster.cli(node.port, "CLIENT", "LIST").split("\n").filter((l) =>
        l.includes("name=herdless-cache-test")
      );
      subscribers += lines.filter((l) => /\bsub=[1-9]/.test(l)).length;
      tracking += lines.filter((l) => /flags=t\b/.test(l)).length;
    }
    assert.is(subscribers, 0);
    assert.ok(tracking >= 1, `tracking connections: ${tracking}`);
    await Promise.all([one.close(), two.close()]);
  },
);

const Xfetch = suite<Ctx>("xfetch() on a cluster");
shared.use(Xfetch);

Xfetch("a hot key is refreshed early by one caller across two clients, and no reader waits", async (ctx) => {
  const namespace = ns();
  const ev = events();
  // random() close to 1: every read of a fresh entry decides to refresh early.
  // A load that takes 20 ms and a huge beta: the gap always exceeds the fresh time left.
  const make = (redis: ClusterClient) =>
    pipeline<string>(
      { redis, ttlMs: 60_000, namespace, onEvent: ev.onEvent, random: () => 0.999999 },
      xfetch({ beta: 1000 }),
      lease(),
    );
  const one = make(ctx.a);
  const two = make(ctx.b);
  let version = 0;
  const o = origin(() => `v${++version}`);
  assert.is(
    await one.get("hot", async (c) => {
      await new Promise((r) => setTimeout(r, 20));
      return o.load(c);
    }),
    "v1",
  );
  const hold = deferred();
  o.hold = hold.promise;
  const values = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? one : two).get("hot", o.load)));
  assert.ok(values.every((v) => v === "v1"), "every reader got the current value at once");
  assert.is(one.stats().hits + two.stats().hits, 40);
  assert.ok(one.stats().earlyRefreshes + two.stats().earlyRefreshes >= 1);
  hold.resolve();
  await until(async () => (await one.get("hot", () => "never")) === "v2", 10_000);
  assert.is(o.calls, 2, "one early refresh ran across both clients");
  await Promise.all([one.close(), two.close()]);
});

const Swr = suite<Ctx>("swr() on a cluster");
shared.use(Swr);

Swr("a stale burst through two clients is served at once while one refresh runs", async (ctx) => {
  const ev = events();
  const [one, two] = caches<string>(ctx, ns(), ev.onEvent, () => [swr({ staleMs: 60_000 }), lease()], 200);
  let version = 0;
  const o = origin(() => `v${++version}`);
  assert.is(await one.get("item", o.load), "v1");
  // Wait (on the server's clock) until the 200 ms fresh window has passed by
  // a second: the clients judge it on their estimate of that clock, which a
  // busy machine can leave hundreds of ms behind (the entry still fresh there).
  const data = one.keys("item").data;
  await until(async () => ((await ctx.a.send(["PTTL", data])) as number) <= 59_000, 5000);
  const hold = deferred();
  o.hold = hold.promise;
  const values = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? one : two).get("item", o.load)));
  assert.ok(values.every((v) => v === "v1"), "the stale value, at once");
  assert.is(one.stats().stale + two.stats().stale, 40);
  hold.resolve();
  await until(async () => (await two.get("item", () => "never")) === "v2", 10_000);
  assert.is(o.calls, 2, "one background refresh across both clients");
  await Promise.all([one.close(), two.close()]);
});

const Failover = suite<Ctx>("lease() across a manual failover");
shared.use(Failover, { last: true });

async function failOver(ctx: Ctx, key: string): Promise<number> {
  const slot = keySlot(key);
  const primary = ctx.cluster.ownerOf(slot);
  const replica = await ctx.cluster.replicaOf(primary);
  await ctx.cluster.failover(replica);
  await ctx.cluster.waitHealthy();
  return replica;
}

Failover(
  "a lease taken before the failover still holds after it: waiters never call the origin, the owner's publish is accepted",
  async (ctx) => {
    const ev = events();
    // A waiter's poll during the failover waits for the paused primary or the
    // new map; a busy machine stretches that past a second. The bound is long
    // enough that a failure means a lost lease, not a slow box.
    const [one, two] = caches<string>(
      ctx,
      ns(),
      ev.onEvent,
      () => [lease({ leaseMs: 20_000, waitMs: 20_000 })],
      10_000,
      10_000,
    );
    const hold = deferred();
    const o = origin(() => "survivor");
    o.hold = hold.promise;
    const owner = one.get("x", o.load, { timeoutMs: 30_000 });
    await o.started.promise;
    const waiters = Array.from({ length: 10 }, () => two.get("x", o.load, { timeoutMs: 30_000 }));
    // Asserted below; a rejection before then must fail this test, not crash the run as unhandled.
    for (const call of [owner, ...waiters]) call.catch(() => {});
    await ev.reach("wait", 10);
    const promoted = await failOver(ctx, one.keys("x").lease);
    hold.resolve();
    assert.is(await owner, "survivor");
    assert.is(
      ctx.a.nodeFor(one.keys("x").lease),
      `127.0.0.1:${promoted}`,
      "the owner published on the promoted replica",
    );
    assert.equal(await Promise.all(waiters), waiters.map(() => "survivor"));
    assert.is(o.calls, 1, "no waiter bypassed the lease");
    assert.is(one.stats().lateRejected, 0, "the replicated lease accepted the owner's publish");
    await Promise.all([one.close(), two.close()]);
  },
);

Failover(
  "gets under load during a failover: bounded errors, and every origin call was made by a lease owner",
  async (ctx) => {
    const ev = events();
    // A short TTL keeps keys expiring, so loads (and lease races) go on throughout.
    // Commands and lease waits outlast the failover, which the harness allows
    // seconds (a busy machine took more than 4 s, and each caller then failed
    // again and again): the bound below is about callers failing over, not
    // about the box's speed.
    const [one, two] = caches<string>(
      ctx,
      ns(),
      ev.onEvent,
      () => [lease({ leaseMs: 5000, waitMs: 20_000 })],
      50,
      20_000,
    );
    const ids = spread(ctx.cluster, one as Cache<unknown>, 4);
    let loads = 0;
    const unleased: string[] = [];
    const loader = async ({ identity }: { identity: unknown }) => {
      loads++;
      // Whoever calls the origin must hold the lease in Redis right now.
      const held = await ctx.b.send(["EXISTS", one.keys(identity as string).lease]).catch(() => 1);
      if (held !== 1) unleased.push(String(identity));
      return "v";
    };
    const workers = 16;
    let done = false;
    let served = 0;
    const loaded = load(
      workers,
      async (w, i) => {
        await (w % 2 ? one : two).get(ids[(w * 3 + i) % ids.length]!, loader, { timeoutMs: 30_000 });
        served++;
      },
      () => done,
    );
    // By progress, not time: the failover lands under load, and the load goes on past it.
    await until(() => served >= 50, 30_000, 5);
    await failOver(ctx, one.keys(ids[0]!).data);
    const before = served;
    await until(() => served >= before + 50, 30_000, 5);
    done = true;
    const { errors } = await loaded;
    assert.ok(
      errors.length <= workers,
      `at most one error per in-flight caller (${errors.length}: ${summary(errors)})`,
    );
    assert.ok(errors.every((e) => isConnectionError(e) || isTimeoutError(e)), summary(errors));
    assert.equal(unleased, [], "no origin call without the lease held in Redis");
    // A lease won just after another owner published is released unused: never more loads than leases.
    assert.ok(loads <= one.stats().leasesWon + two.stats().leasesWon, "no origin call without winning the lease");
    assert.is(one.stats().loads + two.stats().loads, loads);
    // Service resumed: every key is served.
    assert.equal(await Promise.all(ids.map((id) => one.get(id, loader))), ids.map(() => "v"));
    await Promise.all([one.close(), two.close()]);
  },
);

Lease.run();
Xfetch.run();
Swr.run();
Failover.run();
