/**
 * The soak: one million gets over 100,000 keys through two caches (two
 * clients, as two processes would have) with every strategy on, short TTLs so
 * that misses, lease waits, stale serves, early refreshes and jitter all keep
 * happening, and a small share of failing loads. It prints the heap and the
 * internal sizes it can see before and after; after the run (all calls
 * settled, background refreshes drained) they must be back at their starting
 * level. A figure to read, not a timed test.
 *
 *   node --expose-gc --import tsx lab/soak.ts [--gets 1000000] [--keys 100000] [--cluster]
 *   bun lab/soak.ts ...            (Bun.gc is used)
 *
 * Exits with 1 when a size did not come back or the heap grew by more than
 * the allowance (`--heap-mb`, default 16).
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

function side(redis: RedisClient | ClusterClient): Side {
  const c = coalesce();
  const cache = pipeline<{ id: number; body: string }>(
    // Hot keys outlive their TTL many times over (stale serves, early
    // refreshes), the cold tail expires between two reads (misses, leases).
    { redis, ttlMs: 5000, namespace: "soak", commandTimeoutMs: COMMAND_TIMEOUT_MS },
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

function mb(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

async function main(): Promise<void> {
  let stopServer: () => Promise<void>;
  let sides: Side[];
  if (CLUSTER) {
    const cluster = await startCluster();
    stopServer = () => cluster.stop();
    sides = [
      side(await connectCluster({ seeds: cluster.seeds, resp: 3 })),
      side(await connectCluster({ seeds: cluster.seeds })),
    ];
  } else {
    const server = await startRedis({ args: ["--maxmemory", "512mb"] });
    stopServer = () => server.stop();
    sides = [side(await connect({ url: server.url, resp: 3 })), side(await connect(server.url))];
  }
  let loads = 0;
  const loader = async ({ identity }: { identity: unknown }) => {
    loads++;
    await new Promise((r) => setImmediate(r));
    // One load in 500 fails: stale-if-error and error paths stay exercised.
    if (Math.random() < 0.002) throw new Error("origin hiccup");
    return { id: Number(identity), body: "x".repeat(64) };
  };

  let issued = 0;
  let failed = 0;
  const run = async (count: number) => {
    const target = issued + count;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (issued < target) {
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
  // Ten rounds, the heap after each: a leak is a trend, GC noise is not.
  const rounds: number[] = [];
  const per = Math.ceil(GETS / ROUNDS);
  let busy = 0;
  let seconds = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const t = performance.now();
    await run(Math.min(per, GETS - r * per));
    seconds += (performance.now() - t) / 1000;
    if (r === ROUNDS - 1) busy = heapNow();
    else rounds.push(await settleHeap());
  }
  await drain();
  const heapAfter = await settleHeap();
  rounds.push(heapAfter);
  const after = sizes(sides);

  const stats = sides.map((s) => s.cache.stats());
  const sum = (k: keyof (typeof stats)[number]) => stats.reduce((n, s) => n + s[k], 0);
  console.log(
    `soak: ${GETS.toLocaleString()} gets over ${KEYS.toLocaleString()} keys, ${IN_FLIGHT} in flight, ${
      CLUSTER ? "Redis Cluster (3+3)" : "one redis-server"
    }`,
  );
  console.log(
    `  ${seconds.toFixed(1)} s, ${
      Math.round(GETS / seconds).toLocaleString()
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
  let ok = heapAfter - heapBefore <= HEAP_ALLOWANCE || gc === undefined;
  for (const [name, value] of Object.entries(after)) {
    const back = value === before[name];
    ok &&= back;
    console.log(`  ${name}: before ${before[name]}, after ${value}${back ? "" : "  <-- did not return"}`);
  }
  console.log(ok ? "  PASS: heap and internal sizes returned to their starting level" : "  FAIL");

  await Promise.all(sides.map((s) => s.cache.close()));
  for (const s of sides) s.redis.destroy();
  await stopServer();
  process.exit(ok ? 0 : 1);
}

await main();
