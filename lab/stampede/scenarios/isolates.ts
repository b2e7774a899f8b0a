/**
 * The scale edge isolates bring: 1,000 short-lived
 * clients, spread over 4 OS processes as a Worker's requests are spread over
 * isolates, each a connection opened for one request (`lazyConnect`, a
 * per-request `pipeline(coalesce(), lease())`, one `get` of one cold key,
 * `close()`), released together by a Redis barrier. It counts origin calls,
 * the Redis side's cost per request (INFO commandstats and
 * total_connections_received deltas, socket writes per client) and scales it
 * to 10,000 isolates.
 *
 * Two passes: every default (as docs/workers.md's Worker writes it: on a busy
 * machine 1,000 connections opened at once can miss the 1 s command
 * timeout, and a lease can expire before its owner publishes), and timeouts
 * sized for a starved machine, whose figures are the cost of requests that
 * all ran to the end with one origin call.
 *
 * Full-only: 1,000 connections in a second is no test for CI's quick run.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { connect, type RedisClient } from "../../../resp/mod.ts";
import { info } from "../../shared/server_info.ts";
import { addStats } from "../rows/checks.ts";
import { barrierKeys, dismiss, endWorkers, pop, startWorkers } from "../workers/children.ts";
import type { IsolateReport, IsolateSettings } from "../workers/isolate_worker.ts";
import { percentiles } from "../load/open_loop.ts";
import type { LabContext, RowResult, Scenario, ScenarioResult } from "../types.ts";

const WORKER = fileURLToPath(new URL("../workers/isolate_worker.ts", import.meta.url));
const PROCESSES = 4;
const CLIENTS = 250;
const REQUESTS = PROCESSES * CLIENTS;
const ORIGIN_MS = 100;
const SCALE = 10_000;
// The barrier's own commands (and the INFO that reads the deltas): not the requests' cost.
const HARNESS = new Set(["blpop", "rpush", "info"]);
// lease()'s poll pause on a RESP2 client is drawn in [25, 50] ms: 37.5 ms on average.
const MEAN_POLL_MS = 37.5;

/** One pass: its row, and what the table needs beyond it. */
interface Pass {
  row: RowResult;
  connections: number;
  writes: number;
  commands: Map<string, number>;
}

async function commandCalls(redis: RedisClient): Promise<Map<string, number>> {
  const info = String(await redis.send(["INFO", "commandstats"]));
  const calls = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_(\S+?):calls=(\d+)/gm)) calls.set(m[1]!, Number(m[2]));
  return calls;
}

function connectionsReceived(redis: RedisClient): Promise<number> {
  return info(redis, "stats", "total_connections_received");
}

async function runPass(ctx: LabContext, n: number, label: string, settings: IsolateSettings): Promise<Pass> {
  const namespace = `lab-isolates-${n}`;
  const k = barrierKeys(namespace);
  const control = await connect({ url: ctx.url });
  ctx.progress(`isolates (${label}): starting ${PROCESSES} worker processes`);
  const workers = startWorkers(
    "isolates",
    WORKER,
    PROCESSES,
    (i) => [ctx.url, String(i), String(CLIENTS), namespace, String(ORIGIN_MS), JSON.stringify(settings)],
  );
  const reports: IsolateReport[] = [];
  let commands = new Map<string, number>();
  let connections = 0;
  try {
    for (let i = 0; i < PROCESSES; i++) {
      await workers.race(pop(control, k.ready, 30, "isolates: a worker's ready"));
    }
    const before = await commandCalls(control);
    const connectionsBefore = await connectionsReceived(control);
    ctx.progress(`isolates (${label}): ${REQUESTS} requests`);
    await control.send(["RPUSH", k.go, ...Array.from({ length: PROCESSES }, (_, i) => String(i))]);
    for (let i = 0; i < PROCESSES; i++) {
      const report = await workers.race(pop(control, k.result, 60, "isolates: a worker's report"));
      reports.push(JSON.parse(report) as IsolateReport);
    }
    connections = (await connectionsReceived(control)) - connectionsBefore;
    const after = await commandCalls(control);
    commands = new Map(
      [...after]
        .filter(([name]) => !HARNESS.has(name))
        .map(([name, n]): [string, number] => [name, n - (before.get(name) ?? 0)])
        .filter(([, n]) => n > 0)
        .sort((a, b) => b[1] - a[1]),
    );
    // Each worker exits once it has reported.
    await dismiss(workers, control, []);
  } finally {
    await endWorkers(workers, control, [...Object.values(k), `${namespace}:cold`]);
  }
  const sum = (f: (r: IsolateReport) => number) => reports.reduce((a, r) => a + f(r), 0);
  const originCalls = sum((r) => r.originCalls);
  const row: RowResult = {
    set: label,
    strategies: "coalesce, lease",
    requests: REQUESTS,
    originCalls,
    originErrors: 0,
    peakConcurrent: originCalls,
    latency: percentiles(Float64Array.from(reports.flatMap((r) => r.latencies))),
    stale: 0,
    errors: sum((r) => r.errors),
    timeouts: 0,
    dropped: 0,
    series: [originCalls],
    stats: reports.map((r) => r.stats!).reduce(addStats),
    errorSamples: [...new Set(reports.flatMap((r) => r.errorSamples))].slice(0, 3),
    commands: [...commands.values()].reduce((a, n) => a + n, 0),
  };
  return { row, connections, writes: sum((r) => r.writes), commands };
}

function table(passes: Pass[]): { columns: string[]; cells: string[][] } {
  const last = passes[passes.length - 1]!;
  const per = (n: number) => (n / REQUESTS).toFixed(2);
  const line = (measure: string, of: (p: Pass) => number, scales = true) => [
    measure,
    ...passes.flatMap((p) => [String(of(p)), scales ? per(of(p)) : "-"]),
    scales ? String(Math.round((of(last) / REQUESTS) * SCALE)) : "-",
  ];
  const names = [...new Set(passes.flatMap((p) => [...p.commands.keys()]))];
  const ms = (p: Pass) => `${p.row.latency.p50.toFixed(0)} / ${p.row.latency.p99.toFixed(0)}`;
  return {
    columns: [
      "measure",
      ...passes.flatMap((p) => [`${p.row.set}: total`, "per request"]),
      `${SCALE.toLocaleString("en-US")} isolates (last pass x per request)`,
    ],
    cells: [
      [...line("origin calls", (p) => p.row.originCalls, false).slice(0, -1), "1 (one lease)"],
      line("connections opened", (p) => p.connections),
      line("round trips (socket writes)", (p) => p.writes),
      line("Redis commands", (p) => p.row.commands ?? 0),
      ...names.map((name) => line(`- ${name.toUpperCase()}`, (p) => p.commands.get(name) ?? 0)),
      line("lease waiters (stats().waits)", (p) => p.row.stats.waits, false),
      line("late publishes rejected (lease expired)", (p) => p.row.stats.lateRejected, false),
      line("errors", (p) => p.row.errors, false),
      ["p50 / p99 ms, release to value", ...passes.flatMap((p) => [ms(p), "-"]), "-"],
    ],
  };
}

export const isolates: Scenario = {
  id: "isolates",
  title: "1,000 isolates, one cold key",
  fullOnly: true,
  async run(ctx: LabContext): Promise<ScenarioResult> {
    const passes = [
      await runPass(ctx, 1, "defaults", {}),
      await runPass(ctx, 2, "timeouts x5", { commandTimeoutMs: 5000, leaseMs: 7500, waitMs: 10_000 }),
    ];
    const problems: string[] = [];
    for (const { row } of passes) {
      // More than one call is possible (an owner's lease expired first); a call without a lease won is not.
      if (row.originCalls > row.stats.leasesWon || row.originCalls < 1) {
        problems.push(`isolates / ${row.set}: ${row.originCalls} origin calls, ${row.stats.leasesWon} leases won`);
      }
    }
    const pollRate = Math.round((SCALE / MEAN_POLL_MS) * 1000);
    return {
      id: "isolates",
      title: this.title,
      setup: `${PROCESSES} processes x ${CLIENTS} short-lived clients = ${REQUESTS} requests, each ` +
        "connect({ lazyConnect: true }), pipeline(coalesce(), lease()), one get of 1 missing key, close(); " +
        "released by a Redis barrier; RESP2 (the Worker default); timeouts x5: commandTimeoutMs 5000, " +
        "leaseMs 7500, waitMs 10000",
      origin: `simulated origin: ${ORIGIN_MS} ms, counted in each process`,
      bucketMs: 1000,
      durationMs: 1000,
      marks: [],
      rows: passes.map((p) => p.row),
      problems,
      table: table(passes),
      reading: `Commands from INFO commandstats (the barrier's BLPOP/RPUSH left out), connections from ` +
        `total_connections_received (commandstats counts the commands a script runs too: the clock's EVAL shows ` +
        `its TIME), round trips from each client's socket writes. Errors are requests that ` +
        `failed (never an origin call): ${passes.map((p) => p.row.errorSamples[0] ?? "none").join("; ")}. ` +
        `The waiters' GETs and EXISTS are polling (RESP2 has no push wake-up): a waiter reads again every ` +
        `${MEAN_POLL_MS} ms on average on a free event loop, less often on a starved one, until the value lands, ` +
        `so that share is waiters x wait / poll interval: linear in waiters for the same wait (the last column), ` +
        `but ${SCALE.toLocaleString("en-US")} waiters at ${MEAN_POLL_MS} ms ask ${
          pollRate.toLocaleString("en-US")
        } reads/s of Redis, and past what Redis serves the wait (and the polls) grow too. TIME and EVAL ` +
        `(not EVALSHA) are paid by every request that starts before its process has learnt the clock and the ` +
        `scripts, as a fresh isolate's first request does.`,
    };
  },
};
