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
 * (the pipeline without `limit()`), `--profile eviction-storm` (issue 24's
 * settings and fault: see `config.ts`), `--quick` (shorter phases),
 * `--drain-fraction F` (share of the measured drain the load faults ask).
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
import process from "node:process";
import { parseArgs } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { connect } from "../../mod.ts";
import { startRedis } from "../../test/support/redis-server.ts";
import { profile, settings } from "./config.ts";
import { buildFaults, type Fault } from "./faults.ts";
import { RAW_BIG_KEY } from "./drain_probe.ts";
import { bigDemand, hugeDemand, type LoadPlan, type LoadRun, planLoads, rate as byteRate } from "./load.ts";
import { Collector } from "./metrics.ts";
import { callsPerPhase } from "./calls.ts";
import { type Connections, connections, rises, serverCounters } from "./probe.ts";
import { startFaultProxy } from "./proxy.ts";
import { formatTable, type Row } from "./table.ts";
import { verdict } from "./verdict.ts";
import { startWorkers } from "./workers.ts";

const { values: args } = parseArgs({
  options: {
    workers: { type: "string", default: String(settings.workers) },
    rate: { type: "string", default: String(settings.rate) },
    only: { type: "string" },
    wakeups: { type: "string", default: "auto" },
    "no-limit": { type: "boolean", default: false },
    quick: { type: "boolean", default: false },
    "drain-fraction": { type: "string", default: String(settings.drainFraction) },
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
const rate = Number(args.rate);
const wakeups = args.wakeups === "poll" ? "poll" : "auto";
const only = (args.only?.split(",") ?? settings.only)?.map((s) => s.trim().toLowerCase());
const schedule = buildFaults(timing.faultMs).filter((f) =>
  only ? only.some((o) => f.name.toLowerCase().includes(o)) : !f.extra
);
// The workers are spawned with this environment: they build the profile's pipeline.
if (profile !== undefined) process.env.HERDLESS_CHAOS_PROFILE = profile;

const began = Date.now();
// Other work on the machine shows up as latency and timeouts in every row: say how busy it was.
const loadStart = loadavg()[0]!.toFixed(1);
const logDir = mkdtempSync(join(tmpdir(), "herdless-chaos-"));
const logFile = join(logDir, "cache.log");
const cacheServer = await startRedis({ args: ["--logfile", logFile] });
const counterServer = await startRedis();
const proxy = await startFaultProxy(cacheServer.port);
const admin = await connect({ url: cacheServer.url, name: "chaos-admin" });
const counter = await connect({ url: counterServer.url });
const version = /redis_version:(\S+)/.exec(String(await admin.send(["INFO", "server"])))?.[1] ?? "?";
const collector = new Collector(workerCount);
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
const workers = await startWorkers(configs, collector);

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
}

const phases: Phase[] = [];
const notes: string[] = [];
const broken: string[] = [];

/** Run one phase: measure, `act` (the fault, or nothing), wait `restMs`, measure again. */
async function phase(name: string, act: () => Promise<string | undefined>, restMs: number, fault: boolean) {
  process.stderr.write(`${((Date.now() - began) / 1000).toFixed(0).padStart(4)} s  ${name}\n`);
  const before = await connections(admin, proxy.connections);
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
  const moved = rises(counters, await serverCounters(admin, logFile));
  const said = [
    note,
    moved.length > 0 ? `server: ${moved.join(", ")}` : undefined,
    ...collector.notes.splice(0),
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
  });
}

const idle = () => Promise.resolve(undefined);
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
  const ctx = { server: cacheServer, admin, proxy, workers, workerCount, plan: plan!, loads };
  for (const fault of schedule as Fault[]) await phase(fault.name, () => fault.run(ctx), timing.recoverMs, true);
} finally {
  await workers.stop();
}
// After close(), nothing of the workers may remain on the server or in the proxy.
const left = await connections(admin, proxy.connections);
const origin = await callsPerPhase(counter, phases.map((p) => ({ start: p.start, faultEnd: p.faultAt })));
await Promise.all([admin.close(), counter.close(), proxy.close()]);
await Promise.all([cacheServer.stop(), counterServer.stop()]);
rmSync(logDir, { recursive: true, force: true });

const baseline = phases.find((p) => p.name === "baseline")!;
const baselineRate = collector.errorRate(baseline.from, baseline.to);
const rows: Row[] = phases.map((p, i) => ({
  name: p.name,
  fault: p.fault,
  summary: collector.summarise(p.from, p.to, p.faultEnd, baselineRate),
  origin: origin[i]!,
  before: p.before,
  after: p.after,
}));
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
console.log("\nErrors by message (numbers masked as N, key hashes as {…}, addresses as …):\n");
for (const r of rows) {
  for (const [message, count] of Object.entries(r.summary.messages).sort((a, b) => b[1] - a[1])) {
    console.log(`- ${r.name}: ${n(count)} x ${message}`);
  }
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

function n(x: number): string {
  return x.toLocaleString("en-US");
}
