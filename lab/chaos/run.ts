/**
 * `npm run chaos`: several worker processes read through the full pipeline
 * while the cache server and the network between them fail in turn, one
 * fault at a time with recovery time between. Prints a table row per fault
 * and exits 1 on a hang, a value going backwards (or another key's
 * value), a leaked connection, or a worker that does not recover; exits 2
 * (inconclusive) when only recovery failed and the baseline itself failed
 * (a machine too busy to carry the load: see `verdict.ts`). Errors during a
 * fault are reported, never failing: they are what is being measured.
 *
 * Options: `--workers N`, `--rate N` (gets/s per worker), `--only a,b`
 * (faults whose name contains a listed word), `--wakeups poll` (lease
 * waiters poll instead of being woken by client tracking), `--no-limit`
 * (the pipeline without `limit()`), `--profile eviction-storm` (an eviction
 * storm's settings and fault: see `config.ts`), `--quick` (shorter phases),
 * `--drain-fraction F` (share of the measured drain the load faults ask),
 * `--no-workerd` (without the workerd client), `--workerd-rate N` (its requests/s).
 *
 * Two more client populations, each in its own table: the sentinel worker
 * (one more process, through `connectSentinel` to a Sentinel group of its
 * own, which only the "Sentinel failover" fault acts on; started only when
 * that fault is scheduled) and the workerd client (a Worker under workerd,
 * driven at a steady rate from a process of its own, reaching the cache
 * server through a proxy that takes every network fault).
 *
 * During the warm-up the workers measure how fast their connections drain
 * raw 1 MB GETs; the 1 MB and 64 MB faults are sized to a fraction of that
 * drain, both are printed, and recovery from those faults is counted from
 * the moment their last reply arrived (the fault as it ran).
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { parseArgs } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { connect } from "../../mod.ts";
import { startRedis } from "../../test/support/redis_server.ts";
import { profile, settings, type WorkerConfig } from "./config.ts";
import { buildFaults, type Fault, SENTINEL_FAILOVER } from "./faults.ts";
import { RAW_BIG_KEY } from "./drain_probe.ts";
import { bigDemand, hugeDemand, type LoadPlan, type LoadRun, planLoads, rate as byteRate } from "./load.ts";
import { Collector } from "./metrics.ts";
import { callsPerPhase } from "./calls.ts";
import { type Connections, connections, namedClients, rises, serverCounters } from "./probe.ts";
import { fanOut, type FaultProxy, startFaultProxy } from "./proxy.ts";
import { type ChaosSentinel, startSentinel } from "./sentinel.ts";
import { formatTable, type Row } from "./table.ts";
import { verdict, type VerdictInput } from "./verdict.ts";
import type { WorkerdClientConfig } from "./workerd_driver.ts";
import { startWorkers, type Workers } from "./workers.ts";
import { canDrive } from "../../test/workerd/_workerd.ts";
import type { Collector as CollectorType } from "./metrics.ts";

const { values: args } = parseArgs({
  options: {
    workers: { type: "string", default: String(settings.workers) },
    rate: { type: "string", default: String(settings.rate) },
    only: { type: "string" },
    wakeups: { type: "string", default: "auto" },
    "no-limit": { type: "boolean", default: false },
    quick: { type: "boolean", default: false },
    "drain-fraction": { type: "string", default: String(settings.drainFraction) },
    "no-workerd": { type: "boolean", default: false },
    "workerd-rate": { type: "string", default: String(settings.workerdRate) },
    // Read by config.ts when it loads (the workers read it from the environment).
    profile: { type: "string" },
  },
});
const timing = args.quick ? settings.quick : settings;
const fraction = Number(args["drain-fraction"]);
if (!(fraction > 0 && fraction <= 1)) {
  throw new RangeError(`Cannot run chaos: '--drain-fraction' must be in (0, 1], got ${args["drain-fraction"]}`);
}
const workerCount = Number(args.workers);
const workerdRate = Number(args["workerd-rate"]);
const rate = Number(args.rate);
const wakeups = args.wakeups === "poll" ? "poll" : "auto";
const only = (args.only?.split(",") ?? settings.only)?.map((s) => s.trim().toLowerCase());
const schedule = buildFaults(timing.faultMs).filter((f) =>
  only ? only.some((o) => f.name.toLowerCase().includes(o)) : !f.extra
);
// The sentinel worker and its group of six servers exist for one fault: without it, they are not started.
const withSentinel = schedule.some((f) => f.name === SENTINEL_FAILOVER);
// miniflare, which runs workerd, is a Node package.
const workerdSkipped = args["no-workerd"]
  ? "--no-workerd"
  : canDrive
  ? undefined
  : "miniflare (which runs workerd) needs Node; this run is Bun or Deno";
// The workers are spawned with this environment: they build the profile's pipeline.
if (profile !== undefined) process.env.HERDLESS_CHAOS_PROFILE = profile;

const began = Date.now();
// Other work on the machine shows up as latency and timeouts in every row: say how busy it was.
const loadStart = loadavg()[0]!.toFixed(1);
const logDir = mkdtempSync(join(tmpdir(), "herdless-chaos-"));
const logFile = join(logDir, "cache.log");
// Six servers that take seconds to settle: started while the rest starts.
const sentinelStarting = withSentinel
  ? startSentinel().then((group) => ({ group }), (error: unknown) => ({ error: String(error) }))
  : undefined;
const cacheServer = await startRedis({ args: ["--logfile", logFile] });
const counterServer = await startRedis();
const workersProxy = await startFaultProxy(cacheServer.port);
const cfProxy = workerdSkipped === undefined ? await startFaultProxy(cacheServer.port) : undefined;
const proxy = cfProxy === undefined ? workersProxy : fanOut(workersProxy, cfProxy);
const admin = await connect({ url: cacheServer.url, name: "chaos-admin" });
const counter = await connect({ url: counterServer.url });
const version = /redis_version:(\S+)/.exec(String(await admin.send(["INFO", "server"])))?.[1] ?? "?";
const collector = new Collector(workerCount);
const broken: string[] = [];
const driverScript = fileURLToPath(new URL("./workerd_driver.ts", import.meta.url));
const t0 = Date.now();
const windowOf = (at: number) => Math.floor((at - t0) / settings.windowMs);
const configs = Array.from({ length: workerCount }, (_, id) => ({
  id,
  cacheUrl: proxy.url,
  counterUrl: counterServer.url,
  t0,
  rate,
  wakeups,
  limit: !args["no-limit"],
} as const));

// The workerd client (which may build dist/, what the Worker imports, and start workerd) and the sentinel worker (whose
// group takes seconds to settle) start at once.
const cfCollector = new Collector(1);
let cfNotRun = workerdSkipped;
async function startWorkerdClient(cfProxy: FaultProxy): Promise<Workers | undefined> {
  const cfConfig: WorkerdClientConfig = {
    id: 0,
    cacheUrl: cfProxy.url,
    counterUrl: counterServer.url,
    t0,
    rate: workerdRate,
    limit: !args["no-limit"],
  };
  try {
    return await startWorkers([cfConfig], cfCollector, driverScript);
  } catch (error) {
    cfNotRun = cfCollector.notes.splice(0).join("; ") || String(error);
    return undefined;
  }
}
const sCollector = new Collector(1);
async function startSentinelWorker(): Promise<[ChaosSentinel | undefined, Workers | undefined]> {
  const started = sentinelStarting === undefined ? undefined : await sentinelStarting;
  if (started !== undefined && "error" in started) broken.push(`the Sentinel group did not start: ${started.error}`);
  if (started === undefined || !("group" in started)) return [undefined, undefined];
  return [started.group, await startWorkers([sentinelWorker(started.group)], sCollector)];
}
const [cfWorkers, [sentinel, sWorkers]] = await Promise.all([
  cfProxy === undefined ? undefined : startWorkerdClient(cfProxy),
  startSentinelWorker(),
]);
// Last: their 1,600 gets/s would slow everything above down.
const workers = await startWorkers(configs, collector);
// The Worker's requests begin now: sent while the workers' processes were loading, they timed the machine.
cfWorkers?.broadcast("start");
function sentinelWorker({ group }: ChaosSentinel): WorkerConfig {
  return { ...configs[0]!, rate: settings.sentinelRate, sentinel: { urls: group.sentinelUrls, name: group.name } };
}

interface Phase {
  name: string;
  fault: boolean;
  /** Epoch ms when it started and when its fault ended (for warm-up and baseline: the phase's end). */
  start: number;
  faultAt: number;
  /** Its windows, and the first one after the fault ended. */
  from: number;
  faultEnd: number;
  to: number;
  before: Connections;
  after: Connections;
  /** The sentinel worker's and the workerd client's connections, when they run. */
  extra: { sentinel?: Connections; workerd?: Connections }[];
}

/** The other populations' connections: the sentinel worker's on the data nodes, the Worker's on the cache server. */
async function extraConnections(server: number): Promise<{ sentinel?: Connections; workerd?: Connections }> {
  return {
    ...(sentinel === undefined || sWorkers === undefined ? {} : { sentinel: await sentinel.connections() }),
    ...(cfWorkers === undefined || cfProxy === undefined
      ? {}
      : { workerd: { workers: await namedClients(admin, "chaos-cf"), server, proxy: cfProxy.connections } }),
  };
}

/** A population's notes, attached to the phase they arrived in: "worker 0" is that population's one process. */
const noted = (c: CollectorType, who: string) => c.notes.splice(0).map((n) => n.replace(/^worker 0: /, `${who}: `));

const phases: Phase[] = [];
const notes: string[] = [];

/** Run one phase: measure, `act` (the fault, or nothing), wait `restMs`, measure again. */
async function phase(name: string, act: () => Promise<string | undefined>, restMs: number, fault: boolean) {
  process.stderr.write(`${((Date.now() - began) / 1000).toFixed(0).padStart(4)} s  ${name}\n`);
  const before = await connections(admin, proxy.connections);
  const extraBefore = await extraConnections(before.server);
  const counters = await serverCounters(admin, logFile);
  const start = Date.now();
  // A fault that cannot be injected is the tool's failure, not the library's: say so and fail the run.
  const note = await act().catch((error: unknown) => {
    broken.push(`${name}: the fault itself failed: ${String(error)}`);
    return `the fault itself failed: ${String(error)}`;
  });
  const faultEnd = Date.now();
  await sleep(restMs);
  const end = Date.now();
  const after = await connections(admin, proxy.connections);
  const extraAfter = await extraConnections(after.server);
  const moved = rises(counters, await serverCounters(admin, logFile));
  const said = [
    note,
    moved.length > 0 ? `server: ${moved.join(", ")}` : undefined,
    ...collector.notes.splice(0),
    ...noted(sCollector, "sentinel worker"),
    ...noted(cfCollector, "workerd client"),
  ].filter(Boolean);
  if (said.length > 0) notes.push(`${name}: ${said.join("; ")}`);
  phases.push({
    name,
    fault,
    start,
    faultAt: fault ? faultEnd : end,
    from: windowOf(start),
    faultEnd: Math.ceil((faultEnd - t0) / settings.windowMs),
    to: windowOf(end),
    before,
    after,
    extra: [extraBefore, extraAfter],
  });
}

const idle = () => Promise.resolve(undefined);
let cfLeft: Connections | undefined;
const loads: LoadRun[] = [];
let plan: LoadPlan | undefined;
let drained = "";
/** The end of the warm-up: every worker times raw 1 MB GETs on its own connection at once; their sum is the drain. */
async function measureDrain(): Promise<string> {
  await admin.send(["SET", RAW_BIG_KEY, "x".repeat(settings.bigBytes)]);
  const answers = await workers.ask(`drain ${settings.drainProbeMs}`, "drain", settings.hangMs);
  const bytes = answers.reduce((a, d) => a + d.bytes, 0);
  const ms = Math.max(0, ...answers.map((d) => d.ms));
  // A worker too starved to answer within the bound counts as having drained nothing: the drain is a lower bound.
  if (bytes === 0) {
    broken.push(`the drain could not be measured (${answers.length} of ${workerCount} workers answered)`);
  }
  plan = planLoads(bytes > 0 ? (bytes * 1000) / ms : settings.bigBytes, fraction, workerCount, timing.faultMs);
  drained = `drain measured ${byteRate(plan.drainBytesPerSec)} (${workerCount} connections through the proxy, ${
    Math.round(bytes / 1024 / 1024)
  } MB in ${Math.round(ms)} ms, ${answers.length} of ${workerCount} workers answering within ${settings.hangMs} ms)`;
  return drained;
}
try {
  // The drain is measured at the end of the warm-up, once the keys are cached and the workers' code is warm: at its
  // start every get misses and a just-started process is slow, and an idle machine measured 23 MB/s there.
  await phase("warm-up", () => sleep(timing.warmupMs).then(measureDrain), settings.drainRestMs, false);
  await phase("baseline", idle, timing.baselineMs, false);
  const ctx = { server: cacheServer, admin, proxy, workers, workerCount, plan: plan!, loads, sentinel, t0 };
  for (const fault of schedule as Fault[]) await phase(fault.name, () => fault.run(ctx), timing.recoverMs, true);
} finally {
  if (cfWorkers !== undefined) {
    // The Worker's requests stopped and settled, its closes (handed to waitUntil) have had time: none may remain.
    await cfWorkers.ask("quiesce", "done", settings.hangMs + 5000);
    const deadline = Date.now() + 5000;
    while ((await namedClients(admin, "chaos-cf")) > 0 && Date.now() < deadline) await sleep(100);
  }
  cfLeft = (await extraConnections(0)).workerd;
  await Promise.all([workers.stop(), sWorkers?.stop(), cfWorkers?.stop()]);
}
// After close(), nothing of the workers may remain on the server or in the proxy.
const left = await connections(admin, proxy.connections);
const sLeft = (await extraConnections(0)).sentinel;
const times = phases.map((p) => ({ start: p.start, faultEnd: p.faultAt }));
const sentinelKey = (key: string) => new RegExp(`^${settings.sentinelKeyPrefix}\\d+$`).test(key);
const origin = await callsPerPhase(counter, times, (key) => !sentinelKey(key));
const sOrigin = await callsPerPhase(counter, times, sentinelKey);
// What the sentinels made of the old master by the end (they demote it once it answers again).
const roles = sentinel === undefined
  ? ""
  : (await Promise.all(sentinel.group.nodes.map(async (n) => `${n.port} ${await sentinel.role(n.port)}`))).join(", ");
await Promise.all([admin.close(), counter.close(), proxy.close()]);
await Promise.all([cacheServer.stop(), counterServer.stop(), sentinel?.stop()]);
rmSync(logDir, { recursive: true, force: true });

const baseline = phases.find((p) => p.name === "baseline")!;
const baselineRate = collector.errorRate(baseline.from, baseline.to);
/** One population's rows: its windows, its origin calls, its connections. */
function rowsOf(c: CollectorType, calls: typeof origin, conns: (p: Phase) => [Connections, Connections]): Row[] {
  const base = c.errorRate(baseline.from, baseline.to);
  return phases.map((p, i) => ({
    name: p.name,
    fault: p.fault,
    summary: c.summarise(p.from, p.to, p.faultEnd, base),
    origin: calls[i]!,
    before: conns(p)[0],
    after: conns(p)[1],
  }));
}
const rows: Row[] = rowsOf(collector, origin, (p) => [p.before, p.after]);
const none: Connections = { workers: 0, server: 0, proxy: 0 };
const sRows = rowsOf(sCollector, sOrigin, (p) => [p.extra[0]?.sentinel ?? none, p.extra[1]?.sentinel ?? none]);
const cfRows = rowsOf(cfCollector, origin, (p) => [p.extra[0]?.workerd ?? none, p.extra[1]?.workerd ?? none]);
for (const [i, p] of phases.entries()) {
  for (const key of [settings.bigKey, settings.hugeKey]) {
    const calls = origin[i]!.byKey.get(key);
    if (calls !== undefined) notes.push(`${p.name}: ${calls} origin calls for the "${key}" value`);
  }
}

const { failures, inconclusive } = verdict({
  rows,
  hangs: collector.hangs,
  closeHangs: collector.closeHangs,
  expected: baseline.before.workers,
  left,
  failedWorkers: workers.failed,
  recoverMs: timing.recoverMs,
  loads,
  baselineRate,
});
/** Another population's verdict, its lines prefixed with its name (its own baseline judges its recovery). */
function alongside(name: string, c: Collector, input: Omit<VerdictInput, "baselineRate">): void {
  const v = verdict({ ...input, baselineRate: c.errorRate(baseline.from, baseline.to) });
  failures.push(...v.failures.map((f) => `${name}: ${f}`));
  inconclusive.push(...v.inconclusive.map((f) => `${name}: ${f}`));
}
if (sWorkers !== undefined) {
  alongside("sentinel worker", sCollector, {
    rows: sRows,
    hangs: sCollector.hangs,
    closeHangs: sCollector.closeHangs,
    // Its one data connection, wherever the master is.
    expected: 1,
    left: sLeft ?? none,
    failedWorkers: sWorkers.failed,
    recoverMs: timing.recoverMs,
    loads: [],
  });
}
if (cfWorkers !== undefined) {
  alongside("workerd client", cfCollector, {
    rows: cfRows,
    hangs: cfCollector.hangs,
    closeHangs: cfCollector.closeHangs,
    // Each request opens its own connection: only what is left once they all settled is judged.
    expected: Number.POSITIVE_INFINITY,
    left: cfLeft ?? none,
    failedWorkers: cfWorkers.failed,
    recoverMs: timing.recoverMs,
    loads: [],
  });
}
failures.push(...broken);

const total = rows.reduce((a, r) => a + r.summary.gets, 0);
console.log(
  `\n## herdless chaos run: ${workerCount} processes x ${rate} gets/s over ${settings.keys} Zipf keys, ` +
    `${schedule.length} faults of ${timing.faultMs / 1000} s, ${timing.recoverMs / 1000} s recovery each ` +
    `(${profile === undefined ? "" : `profile ${profile}, `}wakeups: ${wakeups}${
      args["no-limit"] ? ", without limit()" : ""
    }; Node ${process.versions.node}, Redis ${version}, load average at start ${loadStart})\n`,
);
if (plan !== undefined) {
  console.log(
    `Load faults sized to ${Math.round(fraction * 100)}% of the ${drained}: 1 MB value 1 + ${plan.bigGets} raw x ` +
      `per worker every ${plan.bigEveryMs} ms (${byteRate(bigDemand(plan, workerCount))}${
        plan.bigFits ? "" : ", too much for this machine: not run"
      }), 64 MB value every ${plan.hugeEveryMs} ms (${byteRate(hugeDemand(plan))}${
        plan.hugeFits ? "" : ", too much for this machine: not run"
      }); recovery from them counted from their last reply.\n`,
  );
}
console.log(formatTable(rows, notes));
printMessages(rows);
console.log(
  `\n### Sentinel worker: 1 process x ${settings.sentinelRate} gets/s through connectSentinel, its own group (1 master, 2 replicas, ` +
    `3 sentinels), keys ${settings.sentinelKeyPrefix}<n>, never behind the proxy\n`,
);
if (sWorkers === undefined) {
  console.log(`Not run: ${withSentinel ? "its group did not start" : "no Sentinel failover scheduled"}.`);
} else {
  console.log(formatTable(sRows, []));
  console.log(
    `\nData nodes at the end: ${roles}. conns: its data connections on the data nodes (the master's clients).`,
  );
  printMessages(sRows);
}
console.log(
  `\n### workerd client: a Worker under workerd, ${workerdRate} requests/s from a driver process, per request ` +
    `connect (RESP2, lazy) + the full pipeline, through a proxy that takes every network fault, the workers' keys\n`,
);
if (cfWorkers === undefined) console.log(`The workerd client did not run: ${cfNotRun}.`);
else {
  console.log(formatTable(cfRows, [], ["origin/s", "excess", "shed", "late pub.", "RSS MB"]));
  console.log(
    `\nconns: its connections on the cache server (chaos-cf) before→after each phase; after its requests stopped: ${
      cfLeft?.workers ?? "?"
    } on the server, ${cfLeft?.proxy ?? "?"} in its proxy`,
  );
  printMessages(cfRows);
}
console.log(
  `\n${n(total)} gets in ${((Date.now() - began) / 1000).toFixed(0)} s; load average at the end ${
    loadavg()[0]!.toFixed(1)
  }; baseline error rate ${
    (baselineRate * 100).toFixed(2)
  }%; after the workers closed: ${left.workers} worker connections, ${left.proxy} proxied`,
);
const list = (lines: string[]) => lines.map((f) => `- ${f}`).join("\n");
if (failures.length > 0) console.log(`\nFAIL\n${list([...failures, ...inconclusive])}`);
else if (inconclusive.length > 0) {
  console.log(`\nINCONCLUSIVE: no hang, no value went backwards, no leaked connection, but\n${list(inconclusive)}`);
} else console.log("\nPASS: no hang, no value went backwards, no leaked connection, every worker recovered");
// 2: the code was not judged (a busy machine); 1: it failed a check that holds on any machine.
process.exit(failures.length > 0 ? 1 : inconclusive.length > 0 ? 2 : 0);

function printMessages(of: Row[]): void {
  console.log("\nErrors by message (numbers masked as N, key hashes as {…}, addresses as …):\n");
  for (const r of of) {
    for (const [message, count] of Object.entries(r.summary.messages).sort((a, b) => b[1] - a[1])) {
      console.log(`- ${r.name}: ${n(count)} x ${message}`);
    }
  }
}

function n(x: number): string {
  return x.toLocaleString("en-US");
}
