/**
 * The soak: one million gets over 100,000 keys through two caches (two
 * clients, as two processes would have) with every strategy on, short TTLs so
 * that misses, lease waits, stale serves, early refreshes and jitter all keep
 * happening, and a small share of failing loads. It prints the heap, the RSS,
 * the server's connections, this process' timers and the internal sizes it
 * can see once warmed up (every key loaded once) and after; after the run
 * (all calls settled, background refreshes drained) they must be back at
 * their warmed-up level. Then both caches close, and nothing may be pending
 * when close() resolved nor run after it (no origin call, no counter moving,
 * no command pending); then the clients close, and no socket or timer of
 * theirs may be left. A figure to read, not a timed test.
 *
 *   node --expose-gc --import tsx lab/soak/run.ts [--gets 1000000] [--keys 100000] [--cluster | --sentinel]
 *                                                 [--minutes 30] [--near]
 *   bun lab/soak/run.ts ...        (Bun.gc is used)
 *
 * `--minutes N` runs for N minutes instead of a number of gets; `--near`
 * puts `near()` in front of the RESP3 cache. `--sentinel` connects both
 * caches through `connectSentinel()` to a group of 1 master, 2 replicas and
 * 3 sentinels, and a third of the way through the run sends `SENTINEL
 * FAILOVER`, waits for the sentinels to agree and both clients to follow,
 * and goes on; connections are then counted on every server of the group.
 * Exits with 1 when a size did not come back, the heap or the RSS grew by
 * more than its allowance (`--heap-mb`, default 16; `--rss-mb`, default
 * 64), connections or timers grew, the failover did not go through, or work
 * was pending at or ran after close().
 */
import process from "node:process";
import {
  type Cache,
  type ClusterClient,
  coalesce,
  type CoalesceStrategy,
  connect,
  connectCluster,
  jitter,
  lease,
  limit,
  near,
  pipeline,
  type RedisClient,
  type SentinelClient,
  swr,
  xfetch,
} from "../../mod.ts";
import { info } from "../shared/server_info.ts";
import { startCluster, startRedis } from "../shared/servers.ts";
import { Failures, ORIGIN_HICCUP } from "./failures.ts";
import { describeFailover, type FailoverReport, type SoakSentinel, startSoakSentinel } from "./sentinel.ts";

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i === -1) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v <= 0) {
    throw new RangeError(`--${name} must be a positive integer, got ${process.argv[i + 1]}`);
  }
  return v;
}

const GETS = flag("gets", 1_000_000);
const KEYS = flag("keys", 100_000);
const IN_FLIGHT = flag("concurrency", 256);
const HEAP_ALLOWANCE = flag("heap-mb", 16) * 2 ** 20;
const RSS_ALLOWANCE = flag("rss-mb", 64) * 2 ** 20;
const MINUTES = process.argv.includes("--minutes") ? flag("minutes", 30) : undefined;
const NEAR = process.argv.includes("--near");
const CLUSTER = process.argv.includes("--cluster");
const SENTINEL = process.argv.includes("--sentinel");
if (CLUSTER && SENTINEL) throw new RangeError("--cluster and --sentinel cannot be combined");
/** Where in the measured run the failover is forced (`--sentinel`). */
const FAILOVER_AT = 1 / 3;
const ROUNDS = 10;
const COMMAND_TIMEOUT_MS = 1000;

const gc: (() => void) | undefined = (globalThis as { gc?: () => void }).gc ??
  ((globalThis as { Bun?: { gc(force: boolean): void } }).Bun
    ? () => (globalThis as unknown as { Bun: { gc(f: boolean): void } }).Bun.gc(true)
    : undefined);

function heapNow(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

// Measure once every timer the last calls armed (command deadlines, lease
// polls, background refreshes) has had time to fire: anything still reachable
// then is retained, not merely in flight.
async function settleHeap(): Promise<number> {
  await new Promise((r) => setTimeout(r, COMMAND_TIMEOUT_MS + 300));
  return heapNow();
}

interface Side {
  redis: RedisClient | ClusterClient | SentinelClient;
  cache: Cache<{ id: number; body: string }>;
  coalesce: CoalesceStrategy;
}

function side(redis: RedisClient | ClusterClient | SentinelClient, withNear = false): Side {
  const c = coalesce();
  const cache = pipeline<{ id: number; body: string }>(
    // Hot keys outlive their TTL many times over (stale serves, early
    // refreshes), the cold tail expires between two reads (misses, leases).
    { redis, ttlMs: 5000, namespace: "soak", commandTimeoutMs: COMMAND_TIMEOUT_MS },
    ...(withNear ? [near({ maxEntries: 20_000 })] : []),
    swr({ staleMs: 3000, ifErrorMs: 5000 }),
    xfetch(),
    c,
    lease({ leaseMs: 2000, waitMs: 3000 }),
    limit({ concurrency: 64, queueMs: 1000 }),
    jitter({ spreadMs: 1000 }),
  );
  return { redis, cache, coalesce: c };
}

/** What can be seen of the internal state, all of which must return to its starting value. */
function sizes(sides: Side[]): Record<string, number> {
  const out: Record<string, number> = {};
  sides.forEach((s, i) => {
    out[`cache ${i}: coalesce flights`] = s.coalesce.size;
    out[`client ${i}: commands pending`] = s.redis.pending;
  });
  return out;
}

/** Timers alive in this process (a timer per call that is never cleared is a leak). */
function timers(): number {
  return process.getActiveResourcesInfo().filter((r) => r === "Timeout" || r === "Immediate").length;
}

/** TCP sockets this process holds open (the servers are child processes: their pipes are not counted). */
function sockets(): number {
  return process.getActiveResourcesInfo().filter((r) => r === "TCPSocketWrap" || r === "TCPWrap").length;
}

function serverConnections(admin: RedisClient): Promise<number> {
  return info(admin, "clients", "connected_clients");
}

function mb(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

async function main(): Promise<void> {
  let stopServer: () => Promise<void>;
  let sides: Side[];
  let connections: () => Promise<{ total: number; detail: string }>;
  let sentinel: SoakSentinel | undefined;
  let socketsBaseline: number;
  const admins: RedisClient[] = [];
  if (CLUSTER) {
    const cluster = await startCluster();
    stopServer = () => cluster.stop();
    // One node's connections stand for the cluster's.
    const admin = await connect(cluster.seeds[0]!);
    admins.push(admin);
    socketsBaseline = sockets();
    sides = [
      side(await connectCluster({ seeds: cluster.seeds, resp: 3 }), NEAR),
      side(await connectCluster({ seeds: cluster.seeds })),
    ];
    connections = async () => {
      const n = await serverConnections(admin);
      return { total: n, detail: `seed node ${n}` };
    };
  } else if (SENTINEL) {
    const group = await startSoakSentinel();
    sentinel = group;
    stopServer = () => group.stop();
    socketsBaseline = sockets();
    sides = [side(await group.client(3), NEAR), side(await group.client(2))];
    connections = () => group.connections();
  } else {
    const server = await startRedis({ args: ["--maxmemory", "512mb"] });
    stopServer = () => server.stop();
    const admin = await connect(server.url);
    admins.push(admin);
    socketsBaseline = sockets();
    sides = [side(await connect({ url: server.url, resp: 3 }), NEAR), side(await connect(server.url))];
    connections = async () => {
      const n = await serverConnections(admin);
      return { total: n, detail: `${n} (this count's own included)` };
    };
  }
  let loads = 0;
  let closed = false;
  let loadsAfterClose = 0;
  const loader = async ({ identity }: { identity: unknown }) => {
    loads++;
    if (closed) loadsAfterClose++;
    await new Promise((r) => setImmediate(r));
    // One load in 500 fails: stale-if-error and error paths stay exercised.
    if (Math.random() < 0.002) throw new Error(ORIGIN_HICCUP);
    return { id: Number(identity), body: "x".repeat(64) };
  };

  let issued = 0;
  const failures = new Failures();
  // The failover (--sentinel): started from the get loop once a third of the
  // measured run is done, so that gets are in flight when it happens.
  let measuredFrom: { at: number; issued: number } | undefined = undefined;
  let failoverSentAt: number | undefined;
  let failoverTask: Promise<FailoverReport> | undefined;
  let followed = false;
  const maybeFailover = () => {
    if (sentinel === undefined || failoverTask !== undefined || measuredFrom === undefined) return;
    const done = MINUTES === undefined
      ? (issued - measuredFrom.issued) / GETS
      : (performance.now() - measuredFrom.at) / (MINUTES * 60_000);
    if (done < FAILOVER_AT) return;
    failoverSentAt = performance.now();
    const clients = sides.map((s) => s.redis as SentinelClient);
    const task = sentinel.failover(clients, failoverSentAt - measuredFrom.at);
    failoverTask = task;
    // Once every client reported the switch, the failover explains no more errors.
    const heard = new Set<number>();
    const stops = clients.map((c, i) =>
      c.onEvent((event) => {
        if (event.type !== "failover") return;
        heard.add(i);
        followed = heard.size === clients.length;
      })
    );
    void task.finally(() => stops.forEach((stop) => stop())).catch(() => {});
  };
  const run = async (count: number, untilMs = Infinity) => {
    const target = issued + count;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (issued < target && performance.now() < untilMs) {
          issued++;
          maybeFailover();
          // Skewed toward low ids: some keys hot, most cold.
          const id = Math.floor(KEYS * Math.random() ** 2);
          // Either "process" may ask for any key: leases are contended across clients.
          const s = sides[issued % 2]!;
          const beganFollowed = followed;
          try {
            await s.cache.get(String(id), loader, { timeoutMs: 5000 });
          } catch (error) {
            failures.add(error, failoverSentAt, beganFollowed);
          }
        }
      }),
    );
  };
  const drain = async () => {
    // Calls have settled; background refreshes may still run: wait for the visible queues to empty.
    for (let i = 0; i < 200 && Object.values(sizes(sides)).some((v) => v > 0); i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    await new Promise((r) => setTimeout(r, 500));
  };

  // Warm-up: subscriptions, scripts, node connections, JIT and the working set
  // (every key loaded once) exist before the baseline: growth is measured from
  // a warmed-up process, not from an empty one.
  await run(Math.min(KEYS * 2, GETS));
  await drain();
  const heapBefore = await settleHeap();
  const before = sizes(sides);
  const rssBefore = process.memoryUsage().rss;
  const connectionsBefore = await connections();
  const timersBefore = timers();
  // Ten rounds, the heap and RSS after each: a leak is a trend, GC noise is not.
  const rounds: number[] = [];
  const rssRounds: number[] = [];
  const per = Math.ceil(GETS / ROUNDS);
  let busy = 0;
  let seconds = 0;
  const issuedBefore = issued;
  measuredFrom = { at: performance.now(), issued };
  for (let r = 0; r < ROUNDS; r++) {
    const t = performance.now();
    if (MINUTES === undefined) await run(Math.min(per, GETS - r * per));
    else await run(Infinity, t + (MINUTES * 60_000) / ROUNDS);
    seconds += (performance.now() - t) / 1000;
    if (r === ROUNDS - 1) busy = heapNow();
    else rounds.push(await settleHeap());
    rssRounds.push(process.memoryUsage().rss);
  }
  // The failover's wait for the group to settle may outlast a short run.
  let failover: FailoverReport | undefined;
  let failoverError: unknown;
  if (failoverTask !== undefined) {
    try {
      failover = await failoverTask;
    } catch (error) {
      failoverError = error;
    }
  }
  await drain();
  const heapAfter = await settleHeap();
  rounds.push(heapAfter);
  const after = sizes(sides);
  const rssAfter = process.memoryUsage().rss;
  const connectionsAfter = await connections();
  const timersAfter = timers();
  const gets = issued - issuedBefore;

  const stats = sides.map((s) => s.cache.stats());
  const sum = (k: keyof (typeof stats)[number]) => stats.reduce((n, s) => n + s[k], 0);
  const where = CLUSTER
    ? "Redis Cluster (3+3)"
    : SENTINEL
    ? "Sentinel group (1 master, 2 replicas, 3 sentinels) through connectSentinel()"
    : "one redis-server";
  console.log(
    `soak: ${gets.toLocaleString()} gets over ${KEYS.toLocaleString()} keys, ${IN_FLIGHT} in flight, ${where}${
      NEAR ? ", near() in front of the RESP3 cache" : ""
    }`,
  );
  console.log(
    `  ${seconds.toFixed(1)} s, ${
      Math.round(gets / seconds).toLocaleString()
    } gets/s; origin loads ${loads.toLocaleString()}, failed gets ${failures.total.toLocaleString()}`,
  );
  console.log(
    `  hits ${sum("hits")}, misses ${sum("misses")}, stale ${sum("stale")}, early refreshes ${
      sum("earlyRefreshes")
    }, leases won ${sum("leasesWon")}, ` +
      `waits ${sum("waits")}, coalesced ${sum("coalesced")}, shed ${sum("shed")}, timeouts ${
        sum("timeouts")
      }, late rejected ${sum("lateRejected")}`,
  );
  for (const [kind, n] of failures.byKind) {
    console.log(`  failed gets, ${kind}: ${n.toLocaleString()} (first: ${failures.samples.get(kind)})`);
  }
  let failoverOk = true;
  if (SENTINEL) {
    const { lines, ok: went } = describeFailover(failover, failoverError ?? "the run ended before a third of it");
    for (const line of lines) console.log(line);
    console.log(
      `    failed gets other than the origin's: ${failures.before} before the failover, ${failures.after} after it${
        failures.first === undefined ? "" : ` (from ${failures.first} to ${failures.last} ms after it was sent)`
      }; ${failures.afterFollowed} of gets begun after both clients reported it`,
    );
    failoverOk = went;
  }
  console.log(
    `  heap ${gc ? "after GC" : "(no GC available: run with --expose-gc)"}: warmed up ${mb(heapBefore)}, after ${
      mb(heapAfter)
    }, change ${mb(heapAfter - heapBefore)} (allowance ${mb(HEAP_ALLOWANCE)})`,
  );
  console.log(`  heap after each tenth of the run: ${rounds.map((h) => (h / 2 ** 20).toFixed(1)).join(" ")} MiB`);
  console.log(`  heap right after the last get (calls settled, timers not yet fired): ${mb(busy)}`);
  console.log(
    `  RSS: warmed up ${mb(rssBefore)}, after ${mb(rssAfter)}, change ${mb(rssAfter - rssBefore)} (allowance ${
      mb(RSS_ALLOWANCE)
    })`,
  );
  console.log(`  RSS after each tenth of the run: ${rssRounds.map((h) => (h / 2 ** 20).toFixed(1)).join(" ")} MiB`);
  console.log(
    `  server connections: warmed up ${connectionsBefore.total} (${connectionsBefore.detail}), after ${connectionsAfter.total} (${connectionsAfter.detail})`,
  );
  console.log(`  timers and immediates alive: warmed up ${timersBefore}, after ${timersAfter}`);
  if (NEAR) console.log(`  near entries at the end: ${sides[0]!.cache.stats().nearEntries}`);
  const heapOk = heapAfter - heapBefore <= HEAP_ALLOWANCE || gc === undefined;
  const rssOk = rssAfter - rssBefore <= RSS_ALLOWANCE;
  const connectionsOk = connectionsAfter.total <= connectionsBefore.total;
  const timersOk = timersAfter <= timersBefore;
  let sizesOk = true;
  for (const [name, value] of Object.entries(after)) {
    const back = value === before[name];
    sizesOk &&= back;
    console.log(`  ${name}: warmed up ${before[name]}, after ${value}${back ? "" : "  <-- did not return"}`);
  }

  // close() drains what the caches started: when it resolved nothing of
  // theirs may still be pending, and after it nothing of theirs may run.
  await Promise.all(sides.map((s) => s.cache.close()));
  closed = true;
  const pendingAtClose = sides.map((s) => s.redis.pending + s.coalesce.size);
  const closedStats = JSON.stringify(sides.map((s) => s.cache.stats()));
  await new Promise((r) => setTimeout(r, COMMAND_TIMEOUT_MS + 500));
  const still = JSON.stringify(sides.map((s) => s.cache.stats())) === closedStats;
  const drainedAtClose = pendingAtClose.every((n) => n === 0);
  const quiet = loadsAfterClose === 0 && still && sides.every((s) => s.redis.pending === 0 && s.coalesce.size === 0);
  console.log(
    `  after the caches' close(): commands and flights pending when it resolved ${pendingAtClose.join(" + ")}${
      drainedAtClose ? "" : "  <-- not drained"
    }; then ${loadsAfterClose} origin calls, counters ${still ? "unchanged" : "moved"}, commands pending ${
      sides.map((s) => s.redis.pending).join(" + ")
    }`,
  );
  // The clients close too: none of their sockets or timers may outlive it.
  // A socket handle is released a tick after destroy(): read them once the
  // event loop has turned, not in the same tick as close() resolving.
  await Promise.all(sides.map((s) => s.redis.close()));
  const socketsAtClose = sockets() - socketsBaseline;
  const timersAtClose = timers();
  await new Promise((r) => setTimeout(r, 200));
  const socketsLeft = sockets() - socketsBaseline;
  const timersLeft = timers();
  console.log(
    `  after the clients' close(): sockets of theirs ${socketsAtClose} when it resolved, ${socketsLeft} 200 ms later; timers ${timersAtClose}, then ${timersLeft}`,
  );
  const leftOpen = socketsLeft > 0 || timersLeft > 0;
  const checks: [boolean, string][] = [
    [!heapOk, "heap grew"],
    [!rssOk, "RSS grew"],
    [!connectionsOk, "connections grew"],
    [!timersOk, "timers grew"],
    [!sizesOk, "an internal size did not return"],
    [SENTINEL && !failoverOk, "the failover did not go through"],
    [!drainedAtClose, "work pending when the caches' close() resolved"],
    [!quiet, "work ran after close()"],
    [leftOpen, "sockets or timers left after the clients' close()"],
  ];
  const failed = checks.filter(([bad]) => bad).map(([, why]) => why);
  console.log(
    failed.length === 0
      ? "  PASS: heap, RSS, connections, timers and internal sizes back at their warmed-up level" +
        `${SENTINEL ? " across the failover" : ""}; nothing pending at close(), nothing ran after it, nothing left open`
      : `  FAIL: ${failed.join("; ")}`,
  );
  for (const a of admins) a.destroy();
  await stopServer();
  process.exit(failed.length === 0 ? 0 : 1);
}

await main();
