/**
 * The Redis-down stories, two tables of the recipes' comparison (full lab
 * and `--only recipes`): herdless' full pipeline with `onRedisDown` "error"
 * (the default) and "local", and the three articles' recipes, while their
 * Redis is killed for 4 s (SIGKILL, then restarted empty on the same port)
 * and while it refuses every write for 10 s (`maxmemory 1` under
 * `noeviction`: reads answered, writes refused with OOM), under a steady load.
 *
 * The app is 4 OS processes (workers/outage_worker.ts), each running every
 * row side by side with its own client, cache and simulated origin, released
 * together by a barrier on the lab's own server; the caches use a server of
 * the story's own, started here, the one that is killed. Per row: failed
 * requests, origin calls (all, those while the fault lasted, the most of
 * one key at once in one process, the most at once in one process, which
 * `limit()` caps for herdless), p99, stale and degraded responses, and the
 * longest a request begun after its process' first failure waited.
 *
 * @module
 */
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { connect, type RedisClient } from "../../../resp/mod.ts";
import { type RedisServer, startRedis } from "../../shared/servers.ts";
import { checkRow } from "../rows/checks.ts";
import { describeRow, type LayerSettings, layerSettings, ROWS } from "../rows/layers.ts";
import { recipeSet } from "../rows/sets.ts";
import type { LabContext, RowResult, ScenarioResult } from "../types.ts";
import { barrierKeys, dismiss, endWorkers, pop, startWorkers, type Workers } from "../workers/children.ts";
import { combine } from "../workers/combine.ts";
import type { OutageCommand, OutageReport, OutageRow, OutageRowReport } from "../workers/outage_protocol.ts";
import { outageTable } from "../report/outage_table.ts";

const WORKER = fileURLToPath(new URL("../workers/outage_worker.ts", import.meta.url));
const PROCESSES = 4;
const KEYS = 20;
const TTL_MS = 2000;
/** Requests per second per row in each process: 400 per row in all, 2,000 for the five rows. */
const RATE = 100;
const ORIGIN_MS = 100;
const TIMEOUT_MS = 1000;
const BUCKET_MS = 250;

const ROW_SPECS: OutageRow[] = [
  { label: 'herdless "error"', mode: "error" },
  { label: 'herdless "local"', mode: "local" },
  { label: "recipe 001", recipe: "001" },
  { label: "recipe 000", recipe: "000" },
  { label: "recipe 002", recipe: "002" },
];

/** A story: what is done to the story's server, from when to when (ms after the release). */
interface Fault {
  id: string;
  title: string;
  /** What the table's setup line says was done. */
  what: string;
  label: string;
  fromMs: number;
  toMs: number;
  durationMs: number;
  start(server: RedisServer): Promise<void>;
  end(server: RedisServer): Promise<void>;
}

async function maxmemory(server: RedisServer, bytes: number): Promise<void> {
  const admin = await connect({ url: server.url });
  try {
    await admin.send(["CONFIG", "SET", "maxmemory", bytes]);
  } finally {
    admin.destroy();
  }
}

const FAULTS: Fault[] = [
  {
    id: "redis-down",
    title: "Redis down for 4 s under steady load",
    what: "the story's redis-server killed (SIGKILL), restarted empty on the same port 4 s later",
    label: "Redis down",
    fromMs: 2000,
    toMs: 6000,
    durationMs: 10_000,
    start: (server) => server.kill(),
    end: (server) => server.restart(),
  },
  {
    id: "write-refused",
    title: "writes refused for 10 s (OOM)",
    what: "CONFIG SET maxmemory 1 under noeviction (reads answered, every write refused with OOM), restored 10 s later",
    label: "writes refused",
    fromMs: 2000,
    toMs: 12_000,
    durationMs: 15_000,
    start: (server) => maxmemory(server, 1),
    end: (server) => maxmemory(server, 0),
  },
];

/** The row's result over its processes' reports. */
function rowOf(spec: OutageRow, layers: LayerSettings, reports: readonly OutageRowReport[]): RowResult {
  const sum = (f: (r: OutageRowReport) => number) => reports.reduce((n, r) => n + f(r), 0);
  const max = (f: (r: OutageRowReport) => number) => Math.max(...reports.map(f));
  const failures = reports.map((r) => r.firstFailureMs).filter((t) => t >= 0);
  const strategies = "mode" in spec
    ? `${describeRow(ROWS - 1)}, onRedisDown "${spec.mode}"`
    : recipeSet(spec.recipe, { staleMs: layers.staleMs }).strategies;
  return {
    set: spec.label,
    strategies,
    requests: sum((r) => r.issued),
    originCalls: sum((r) => r.originCalls),
    originErrors: sum((r) => r.originErrors),
    peakConcurrent: max((r) => r.peak),
    ...combine(reports),
    dropped: sum((r) => r.dropped),
    series: reports[0]!.series.map((_, i) => sum((r) => r.series[i] ?? 0)),
    commands: sum((r) => r.commands),
    outage: {
      callsInFault: sum((r) => r.originCallsInFault),
      peakPerKey: max((r) => r.peakPerKey),
      waitedAfterFailure: max((r) => r.waitedAfterFailure),
      firstFailureMs: failures.length === 0 ? -1 : Math.min(...failures),
    },
  };
}

/** What herdless promises under the fault, checked for its rows: a break makes the lab fail. */
function promises(title: string, spec: OutageRow, row: RowResult, layers: LayerSettings): string[] {
  if (!("mode" in spec)) return [];
  const at = `${title} / ${row.set}`;
  const p: string[] = [];
  if (row.outage!.peakPerKey > 1) {
    p.push(`${at}: ${row.outage!.peakPerKey} origin calls of one key at once in one process (coalesce() allows one)`);
  }
  if (row.peakConcurrent > layers.concurrency) {
    p.push(`${at}: ${row.peakConcurrent} origin calls at once in one process, above limit(${layers.concurrency})`);
  }
  return p;
}

async function runStory(
  ctx: LabContext,
  control: RedisClient,
  workers: Workers,
  server: RedisServer,
  fault: Fault,
): Promise<ScenarioResult> {
  const layers = layerSettings(TTL_MS, { waitMs: 1000 });
  const namespace = `lab-outage-${fault.id}`;
  const k = barrierKeys(namespace);
  const cmd: OutageCommand = {
    namespace,
    url: server.url,
    rows: ROW_SPECS,
    layers,
    ttlMs: TTL_MS,
    keys: KEYS,
    zipf: 1,
    ratePerSec: RATE,
    durationMs: fault.durationMs,
    timeoutMs: TIMEOUT_MS,
    originMs: ORIGIN_MS,
    bucketMs: BUCKET_MS,
    fault: { fromMs: fault.fromMs, toMs: fault.toMs },
  };
  ctx.progress(`${fault.title}: warming ${KEYS} keys x ${ROW_SPECS.length} rows in ${PROCESSES} processes`);
  for (let i = 0; i < PROCESSES; i++) await control.send(["RPUSH", `lab-outage:cmd:${i}`, JSON.stringify(cmd)]);
  for (let i = 0; i < PROCESSES; i++) await workers.race(pop(control, k.ready, 60, "redis down: a worker's ready"));
  // One RPUSH of one token per worker: every blocked BLPOP is served by this single command.
  await control.send(["RPUSH", k.go, ...Array.from({ length: PROCESSES }, (_, i) => String(i))]);
  const t0 = performance.now();
  const since = () => Math.round(performance.now() - t0);
  const ticker = setInterval(() => ctx.progress(`${fault.title}: ${(since() / 1000).toFixed(1)} s`), 200);
  let span: { from: number; to: number };
  const reports: OutageReport[] = [];
  try {
    await sleep(fault.fromMs);
    const from = since();
    await workers.race(fault.start(server));
    await sleep(Math.max(0, fault.toMs - since()));
    await workers.race(fault.end(server));
    span = { from, to: since() };
    const within = Math.ceil(fault.durationMs / 1000) + 60;
    for (let i = 0; i < PROCESSES; i++) {
      reports.push(JSON.parse(await workers.race(pop(control, k.result, within, "redis down: a worker's report"))));
    }
  } finally {
    clearInterval(ticker);
    await control.send(["DEL", ...Object.values(k)]).catch(() => {});
  }
  const rows = ROW_SPECS.map((spec, j) => rowOf(spec, layers, reports.map((r) => r.rows[j]!)));
  const problems = rows.flatMap((row, j) => {
    const of = reports.map((r) => r.rows[j]!);
    const settled = of.reduce((n, r) => n + r.ok + r.errors + r.timeouts, 0);
    return [
      ...checkRow(fault.title, row, of.reduce((n, r) => n + r.hung, 0), settled),
      ...promises(fault.title, ROW_SPECS[j]!, row, layers),
    ];
  });
  const loop = Math.max(...reports.map((r) => r.loopDelay.p99));
  return {
    id: fault.id,
    title: fault.title,
    setup:
      `${PROCESSES} app processes x ${RATE} requests/s per row over ${KEYS} keys (Zipf 1) for ${
        fault.durationMs / 1000
      } s, TTL ${TTL_MS} ms, herdless get timeout ${TIMEOUT_MS} ms (commandTimeoutMs 1000), limit(${layers.concurrency}); ` +
      `${fault.what}: from ${span.from} to ${span.to} ms; every row's client connect({ resp: 3 }) with its defaults`,
    origin: `simulated origin: ${ORIGIN_MS} ms, one per row in each process`,
    bucketMs: BUCKET_MS,
    durationMs: fault.durationMs,
    marks: [{ atMs: span.from, toMs: span.to, label: fault.label }],
    rows,
    problems,
    ...outageTable(rows, {
      keys: KEYS,
      processes: PROCESSES,
      ttlMs: TTL_MS,
      faultMs: span.to - span.from,
      loopDelayP99: loop,
    }),
  };
}

/** Both stories, one after the other, on one server of their own and the same app processes. */
export async function redisDownStories(ctx: LabContext): Promise<ScenarioResult[]> {
  ctx.progress(`Redis down: starting a redis-server of its own and ${PROCESSES} app processes`);
  const server = await startRedis({ args: ["--maxmemory-policy", "noeviction"] });
  const control = await connect({ url: ctx.url });
  const workers = startWorkers("redis down", WORKER, PROCESSES, (i) => [ctx.url, String(i)]);
  const inboxes = Array.from({ length: PROCESSES }, (_, i) => `lab-outage:cmd:${i}`);
  try {
    for (let i = 0; i < PROCESSES; i++) {
      await workers.race(pop(control, "lab-outage:hello", 30, "redis down: a worker's hello"));
    }
    const results: ScenarioResult[] = [];
    for (const fault of FAULTS) results.push(await runStory(ctx, control, workers, server, fault));
    await dismiss(workers, control, inboxes);
    return results;
  } finally {
    await endWorkers(workers, control, ["lab-outage:hello", ...inboxes]);
    await server.stop();
  }
}
