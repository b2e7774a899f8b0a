/**
 * The soak: one million gets over 100,000 keys through two caches (two
 * clients, as two processes would have) with every strategy on, short TTLs so
 * that misses, lease waits, stale serves, early refreshes and jitter all keep
 * happening, and a small share of failing loads. It prints the heap, the RSS,
 * the server's connections, this process' timers and the internal sizes it
 * can see before and after; after the run (all calls settled, background
 * refreshes drained) they must be back at their starting level. Then both
 * caches close, and nothing may run after close() resolved (no origin call,
 * no counter moving, no command pending). A figure to read, not a timed test.
 *
 *   node --expose-gc --import tsx lab/soak.ts [--gets 1000000] [--keys 100000] [--cluster]
 *                                             [--minutes 30] [--near]
 *   bun lab/soak.ts ...            (Bun.gc is used)
 *
 * `--minutes N` runs for N minutes instead of a number of gets; `--near`
 * puts `near()` in front of the RESP3 cache. Exits with 1 when a size did
 * not come back, the heap or the RSS grew by more than its allowance
 * (`--heap-mb`, default 16; `--rss-mb`, default 64), connections or timers
 * grew, or work ran after close().
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
  swr,
  xfetch,
} from "../mod.ts";
import { startCluster } from "../test/support/redis-cluster.ts";
import { startRedis } from "../test/support/redis-server.ts";

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
  redis: RedisClient | ClusterClient;
  cache: Cache<{ id: number; body: string }>;
  coalesce: CoalesceStrategy;
}

function side(redis: RedisClient | ClusterClient, withNear = false): Side {
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

async function serverConnections(admin: RedisClient): Promise<number> {
  return Number(/^connected_clients:(\d+)/m.exec(String(await admin.send(["INFO", "clients"])))?.[1]);
}

function mb(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

async function main(): Promise<void> {
  let stopServer: () => Promise<void>;
  let sides: Side[];
  let admin: RedisClient;
  if (CLUSTER) {
    const cluster = await startCluster();
    stopServer = () => cluster.stop();
    sides = [
      side(await connectCluster({ seeds: cluster.seeds, resp: 3 }), NEAR),
      side(await connectCluster({ seeds: cluster.seeds })),
    ];
    // One node's connections stand for the cluster's.
    admin = await connect(cluster.seeds[0]!);
  } else {
    const server = await startRedis({ args: ["--maxmemory", "512mb"] });
    stopServer = () => server.stop();
    sides = [side(await connect({ url: server.url, resp: 3 }), NEAR), side(await connect(server.url))];
    admin = await connect(server.url);
  }
  let loads = 0;
  let closed = false;
  let loadsAfterClose = 0;
  const loader = async ({ identity }: { identity: unknown }) => {
    loads++;
    if (closed) loadsAfterClose++;
    await new Promise((r) => setImmediate(r));
    // One load in 500 fails: stale-if-error and error paths stay exercised.
    if (Math.random() < 0.002) throw new Error("origin hiccup");
    return { id: Number(identity), body: "x".repeat(64) };
  };

  let issued = 0;
  let failed = 0;
  const run = async (count: number, untilMs = Infinity) => {
    const target = issued + count;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (issued < target && performance.now() < untilMs) {
          issued++;
          // Skewed toward low ids: some keys hot, most cold.
          const id = Math.floor(KEYS * Math.random() ** 2);
          // Either "process" may ask for any key: leases are contended across clients.
          const s = sides[issued % 2]!;
          try {
            await s.cache.get(String(id), loader, { timeoutMs: 5000 });
          } catch {
            failed++;
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
  // (every key loaded once) exist before the baseline.
  await run(Math.min(KEYS * 2, GETS));
  await drain();
  const heapBefore = await settleHeap();
  const before = sizes(sides);
  const rssBefore = process.memoryUsage().rss;
  const connectionsBefore = await serverConnections(admin);
  const timersBefore = timers();
  // Ten rounds, the heap after each: a leak is a trend, GC noise is not.
  const rounds: number[] = [];
  const per = Math.ceil(GETS / ROUNDS);
  let busy = 0;
  let seconds = 0;
  const issuedBefore = issued;
  for (let r = 0; r < ROUNDS; r++) {
    const t = performance.now();
    if (MINUTES === undefined) await run(Math.min(per, GETS - r * per));
    else await run(Infinity, t + (MINUTES * 60_000) / ROUNDS);
    seconds += (performance.now() - t) / 1000;
    if (r === ROUNDS - 1) busy = heapNow();
    else rounds.push(await settleHeap());
  }
  await drain();
  const heapAfter = await settleHeap();
  rounds.push(heapAfter);
  const after = sizes(sides);
  const rssAfter = process.memoryUsage().rss;
  const connectionsAfter = await serverConnections(admin);
  const timersAfter = timers();
  const gets = issued - issuedBefore;

  const stats = sides.map((s) => s.cache.stats());
  const sum = (k: keyof (typeof stats)[number]) => stats.reduce((n, s) => n + s[k], 0);
  console.log(
    `soak: ${gets.toLocaleString()} gets over ${KEYS.toLocaleString()} keys, ${IN_FLIGHT} in flight, ${
      CLUSTER ? "Redis Cluster (3+3)" : "one redis-server"
    }${NEAR ? ", near() in front of the RESP3 cache" : ""}`,
  );
  console.log(
    `  ${seconds.toFixed(1)} s, ${
      Math.round(gets / seconds).toLocaleString()
    } gets/s; origin loads ${loads.toLocaleString()}, failed gets ${failed.toLocaleString()}`,
  );
  console.log(
    `  hits ${sum("hits")}, misses ${sum("misses")}, stale ${sum("stale")}, early refreshes ${
      sum("earlyRefreshes")
    }, leases won ${sum("leasesWon")}, ` +
      `waits ${sum("waits")}, coalesced ${sum("coalesced")}, shed ${sum("shed")}, timeouts ${
        sum("timeouts")
      }, late rejected ${sum("lateRejected")}`,
  );
  console.log(
    `  heap ${gc ? "after GC" : "(no GC available: run with --expose-gc)"}: before ${mb(heapBefore)}, after ${
      mb(heapAfter)
    }, change ${mb(heapAfter - heapBefore)}`,
  );
  console.log(`  heap after each tenth of the run: ${rounds.map((h) => (h / 2 ** 20).toFixed(1)).join(" ")} MiB`);
  console.log(`  heap right after the last get (calls settled, timers not yet fired): ${mb(busy)}`);
  console.log(`  RSS: before ${mb(rssBefore)}, after ${mb(rssAfter)}, change ${mb(rssAfter - rssBefore)}`);
  console.log(`  server connections: before ${connectionsBefore}, after ${connectionsAfter}`);
  console.log(`  timers and immediates alive: before ${timersBefore}, after ${timersAfter}`);
  if (NEAR) console.log(`  near entries at the end: ${sides[0]!.cache.stats().nearEntries}`);
  let ok = heapAfter - heapBefore <= HEAP_ALLOWANCE || gc === undefined;
  ok &&= rssAfter - rssBefore <= RSS_ALLOWANCE && connectionsAfter <= connectionsBefore && timersAfter <= timersBefore;
  for (const [name, value] of Object.entries(after)) {
    const back = value === before[name];
    ok &&= back;
    console.log(`  ${name}: before ${before[name]}, after ${value}${back ? "" : "  <-- did not return"}`);
  }

  // close() drains what the caches started: after it resolved, nothing of theirs may run.
  await Promise.all(sides.map((s) => s.cache.close()));
  closed = true;
  const closedStats = JSON.stringify(sides.map((s) => s.cache.stats()));
  await new Promise((r) => setTimeout(r, COMMAND_TIMEOUT_MS + 500));
  const quiet = loadsAfterClose === 0 && JSON.stringify(sides.map((s) => s.cache.stats())) === closedStats &&
    sides.every((s) => s.redis.pending === 0 && s.coalesce.size === 0);
  console.log(
    `  after close(): ${loadsAfterClose} origin calls, counters ${quiet ? "unchanged" : "moved"}, commands pending ${
      sides.map((s) => s.redis.pending).join(" + ")
    }`,
  );
  ok &&= quiet;
  console.log(
    ok
      ? "  PASS: heap, RSS, connections, timers and internal sizes back at their starting level; nothing ran after close()"
      : "  FAIL",
  );
  for (const s of sides) s.redis.destroy();
  admin.destroy();
  await stopServer();
  process.exit(ok ? 0 : 1);
}

await main();
