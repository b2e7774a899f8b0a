/**
 * `npm run bench`: starts a redis-server pinned to core 0 (or uses
 * `REDIS_URL`), then runs every client on every scenario, each measurement in
 * its own OS process pinned to core 1, interleaved (A B C A B C ...) over
 * several repetitions, and prints medians, ratios, peak RSS and the
 * performance targets.
 *
 *   npm run bench                      full run (a few minutes)
 *   npm run bench -- --quick           smoke run (about 30 s)
 *   npm run bench -- --json            JSON on stdout instead of the table
 *   npm run bench -- --only get-100,set-batch --reps 5 --duration 3000
 *   npm run bench -- --no-bun          Node clients only
 *   npm run bench -- --only cache      only the cache-level table, coherence lag and near memory
 *                                      (groups: client, hit, cache; or scenarios: cache-100, cache-seq,
 *                                      coherence, memory, get-seq, ...); --writes and --entries size the last two
 *   npm run bench -- --only cache-100 --caches raw-get-tracking,full   some rows of the cache table
 *   npm run bench -- --cpu-prof        also write V8 CPU profiles of every worker to bench/.out/prof
 *                                      (sampling every --cpu-prof-interval µs, default 1000)
 *
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { connect } from "../resp/mod.ts";
import { startRedis } from "../test/support/redis_server.ts";
import { cacheMarkdown, type CacheSection, cacheTargets } from "./cache_report.ts";
import { type CacheName, CACHES, NEAR_CACHES, nearUnavailable } from "./caches.ts";
import { COHERENCE_VARIANTS, type CoherenceResult, runCoherence } from "./coherence.ts";
import { MEMORY_VARIANTS, type MemoryResult, type MemoryTask, populateMemory } from "./memory.ts";
import { MATRIX, matrixMarkdown, seedMatrix } from "./matrix.ts";
import { markdown, median, type Series, spread, targets } from "./report.ts";
import {
  CACHE_EXTRAS,
  CACHE_SCENARIOS,
  type CacheScenario,
  getKeys,
  GROUPS,
  type ScenarioName,
  SCENARIOS,
  VALUE,
} from "./scenarios.ts";
import type { WorkerResult, WorkerTask } from "./worker.ts";

// This file is bundled to bench/.out/run.mjs; the worker sits beside it.
const here = dirname(fileURLToPath(import.meta.url));
const benchDir = resolve(here, "..");
const rootDir = resolve(benchDir, "..");
const workerPath = join(here, "worker.mjs");

interface Options {
  quick: boolean;
  json: boolean;
  reps: number;
  warmupMs: number;
  durationMs: number;
  /** Client and hit scenarios to run. */
  only: ScenarioName[];
  /** Cache-level scenarios to run, and whether to measure coherence lag and near memory. */
  cache: CacheScenario[];
  coherence: boolean;
  memory: boolean;
  /** The second method's rows (bench/matrix.ts); only when `--only` names `matrix`. */
  matrix: boolean;
  /** Paced writes of the coherence measurement. */
  writes: number;
  /** Near entries of the memory measurement. */
  entries: number;
  bun: boolean;
  node: boolean;
  cpuProf: boolean;
  cpuProfIntervalUs: number;
  pin: boolean;
  /** The rows of the cache table to run (`--caches`); all by default. */
  caches: readonly CacheName[];
}

function parseArgs(argv: readonly string[]): Options {
  const quick = argv.includes("--quick");
  const o: Options = {
    quick,
    json: argv.includes("--json"),
    reps: quick ? 1 : 3,
    warmupMs: quick ? 300 : 700,
    durationMs: quick ? 400 : 1_500,
    only: [...SCENARIOS],
    cache: [...CACHE_SCENARIOS],
    coherence: true,
    memory: true,
    matrix: false,
    writes: quick ? 1_000 : 10_000,
    entries: quick ? 10_000 : 100_000,
    bun: !argv.includes("--no-bun"),
    node: !argv.includes("--no-node"),
    cpuProf: argv.includes("--cpu-prof"),
    cpuProfIntervalUs: 1000,
    pin: !argv.includes("--no-pin"),
    caches: CACHES,
  };
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const int = (name: string, min: number) => {
    const raw = value(name);
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) {
      throw new RangeError(
        `Cannot run the bench: '${name}' must be an integer >= ${min}, got ${raw}`,
      );
    }
    return n;
  };
  o.reps = int("--reps", 1) ?? o.reps;
  o.durationMs = int("--duration", 50) ?? o.durationMs;
  o.warmupMs = int("--warmup", 0) ?? o.warmupMs;
  o.cpuProfIntervalUs = int("--cpu-prof-interval", 10) ?? o.cpuProfIntervalUs;
  o.writes = int("--writes", 1) ?? o.writes;
  o.entries = int("--entries", 1) ?? o.entries;
  const caches = value("--caches");
  if (caches !== undefined) {
    const names = caches.split(",").map((s) => s.trim());
    for (const n of names) {
      if (!(CACHES as readonly string[]).includes(n)) {
        throw new RangeError(
          `Cannot run the bench: unknown cache '${n}' in --caches (known: ${CACHES.join(", ")})`,
        );
      }
    }
    o.caches = CACHES.filter((n) => names.includes(n));
  }
  const only = value("--only");
  if (only !== undefined) {
    const known = [
      ...Object.keys(GROUPS),
      ...SCENARIOS,
      ...CACHE_SCENARIOS,
      ...CACHE_EXTRAS,
      "matrix",
    ];
    const names = only.split(",").map((s) => s.trim()).flatMap((n) => GROUPS[n] ?? [n]);
    for (const n of names) {
      if (!known.includes(n)) {
        throw new RangeError(
          `Cannot run the bench: unknown scenario '${n}' in --only (known: ${known.join(", ")})`,
        );
      }
    }
    o.only = SCENARIOS.filter((n) => names.includes(n));
    o.cache = CACHE_SCENARIOS.filter((n) => names.includes(n));
    o.coherence = names.includes("coherence");
    o.memory = names.includes("memory");
    o.matrix = names.includes("matrix");
  }
  return o;
}

/** The Bun binary: `BUN`, the root devDependency, or `bun` on PATH. */
function findBun(): string | undefined {
  const candidates = [
    process.env.BUN,
    join(rootDir, "node_modules", ".bin", "bun"),
    "bun",
  ].filter((c): c is string => !!c);
  for (const c of candidates) {
    const r = spawnSync(c, ["--version"], { encoding: "utf8" });
    if (r.status === 0) return c;
  }
  return undefined;
}

/** The 1-minute load average, to tell a quiet run from a busy one. */
function loadAverage(): number | undefined {
  try {
    return Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);
  } catch {
    return undefined;
  }
}

function version(bin: string, args: string[]): string {
  const r = spawnSync(bin, args, { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : "?";
}

function packageVersion(name: string): string {
  try {
    return (JSON.parse(
      readFileSync(
        join(benchDir, "node_modules", name, "package.json"),
        "utf8",
      ),
    ) as {
      version: string;
    }).version;
  } catch {
    return "?";
  }
}

function cpuModel(): string {
  try {
    return /^model name\s*:\s*(.*)$/m.exec(
      readFileSync("/proc/cpuinfo", "utf8"),
    )?.[1] ?? cpus()[0]?.model ?? "?";
  } catch {
    return cpus()[0]?.model ?? "?";
  }
}

const hasTaskset = spawnSync("taskset", ["-c", "0", "true"]).status === 0;

/** The runtime's own peak RSS with nothing loaded: what every client's figure includes. */
function runtimeBaseline(bin: string): number | undefined {
  const r = spawnSync(bin, [
    "-e",
    `process.stdout.write(/VmHWM:\\s+(\\d+)/.exec(require("fs").readFileSync("/proc/self/status","utf8"))[1])`,
  ], { encoding: "utf8" });
  const kb = Number(r.stdout);
  return r.status === 0 && kb > 0 ? kb * 1024 : undefined;
}

interface Job {
  runtime: "node" | "bun";
  task: WorkerTask;
  rep: number;
  /** The series it adds to when not its scenario's: a matrix row's id. */
  series?: string;
}

function plan(
  o: Options,
  bun: string | undefined,
  url: string,
  nearWhy: string | undefined,
  serverPid: number | undefined,
): Job[] {
  const jobs: Job[] = [];
  const base = {
    url,
    warmupMs: o.warmupMs,
    durationMs: o.durationMs,
    resp: 2 as const,
    ...(serverPid === undefined ? {} : { serverPid }),
  };
  for (const scenario of o.only) {
    for (let rep = 1; rep <= o.reps; rep++) {
      if (scenario.startsWith("hit-")) {
        if (!o.node) continue;
        for (const client of ["raw-get", "pipeline"] as const) {
          jobs.push({
            runtime: "node",
            rep,
            task: { ...base, scenario, client },
          });
        }
        continue;
      }
      if (o.node) {
        for (const client of ["ours", "node-redis", "ioredis"] as const) {
          jobs.push({
            runtime: "node",
            rep,
            task: { ...base, scenario, client },
          });
        }
      }
      if (o.bun && bun !== undefined) {
        for (const client of ["ours", "bun"] as const) {
          jobs.push({
            runtime: "bun",
            rep,
            task: { ...base, scenario, client },
          });
        }
      }
    }
  }
  // The second method: repetitions outermost, so each row's are spread over the run.
  for (let rep = 1; o.matrix && rep <= o.reps; rep++) {
    for (const cell of MATRIX) {
      const task = { ...base, scenario: cell.scenario, shape: cell.shape };
      if (o.node) {
        for (const client of ["ours", "node-redis"] as const) {
          jobs.push({
            runtime: "node",
            rep,
            series: cell.id,
            task: { ...task, client },
          });
        }
      }
      if (o.bun && bun !== undefined) {
        for (const client of ["ours", "bun"] as const) {
          jobs.push({
            runtime: "bun",
            rep,
            series: cell.id,
            task: { ...task, client },
          });
        }
      }
    }
  }
  // The cache-level table: every cache in its own process, interleaved, Node only.
  for (const scenario of o.node ? o.cache : []) {
    for (let rep = 1; rep <= o.reps; rep++) {
      for (const client of o.caches) {
        // near() rows without client tracking say why instead (probed once by the parent).
        if (NEAR_CACHES.includes(client) && nearWhy !== undefined) continue;
        jobs.push({
          runtime: "node",
          rep,
          task: { ...base, scenario, client },
        });
      }
    }
  }
  return jobs;
}

function runJob(
  job: Job,
  o: Options,
  bun: string | undefined,
): Promise<WorkerResult> {
  const bin = job.runtime === "bun" ? bun! : process.execPath;
  const args: string[] = [];
  if (o.cpuProf) {
    const dir = join(here, "prof");
    mkdirSync(dir, { recursive: true });
    const name = `${job.runtime}-${job.task.scenario}-${job.task.client}-${job.rep}.cpuprofile`;
    args.push(
      "--cpu-prof",
      `--cpu-prof-dir=${dir}`,
      `--cpu-prof-name=${name}`,
      `--cpu-prof-interval=${o.cpuProfIntervalUs}`,
    );
  }
  args.push(workerPath, JSON.stringify(job.task));
  const [cmd, argv] = o.pin && hasTaskset ? ["taskset", ["-c", "1", bin, ...args]] : [bin, args];
  return new Promise((resolve) => {
    const child = spawn(cmd, argv, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err = (err + d).slice(-2000)));
    const limit = setTimeout(
      () => child.kill("SIGKILL"),
      job.task.warmupMs + job.task.durationMs + 60_000,
    );
    child.on("close", (code) => {
      clearTimeout(limit);
      const line = out.trim().split("\n").pop() ?? "";
      try {
        resolve(JSON.parse(line) as WorkerResult);
      } catch {
        resolve({
          client: job.task.client,
          scenario: job.task.scenario,
          runtime: job.runtime,
          ops: 0,
          elapsedMs: 0,
          opsPerSec: 0,
          peakRssBytes: 0,
          baseRssBytes: 0,
          error: `worker exited with ${code}: ${err.trim() || out.trim() || "no output"}`,
        });
      }
    });
  });
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const log = (line: string) => process.stderr.write(line + "\n");
  const bun = o.bun ? findBun() : undefined;
  if (o.bun && bun === undefined) {
    log(
      "Bun not found (BUN, node_modules/.bin/bun or PATH): Bun scenarios skipped",
    );
  }
  const wantsCache = o.node && (o.cache.length > 0 || o.coherence || o.memory);

  let server: Awaited<ReturnType<typeof startRedis>> | undefined;
  let url = process.env.REDIS_URL;
  let pinned = false;
  if (url === undefined) {
    server = await startRedis();
    url = server.url;
    // -a: redis' background threads too. Clients then go to core 1.
    if (o.pin && hasTaskset && cpus().length >= 2 && server.pid !== undefined) {
      pinned = spawnSync("taskset", ["-a", "-p", "-c", "0", String(server.pid)])
        .status === 0;
    }
  }
  if (!pinned) o.pin = false;
  try {
    const seed = await connect(url);
    const info = String(await seed.send(["INFO", "server"]));
    await Promise.all(getKeys.map((k) => seed.send(["SET", k, VALUE])));
    if (o.matrix) await seedMatrix(seed);
    await seed.close();
    const nearWhy = wantsCache ? await nearUnavailable(url) : undefined;
    if (nearWhy !== undefined) log(`near() not available: ${nearWhy}`);

    const env = {
      date: new Date().toISOString(),
      nproc: cpus().length,
      cpu: cpuModel(),
      node: process.version,
      bun: bun === undefined ? undefined : version(bun, ["--version"]),
      redis: /redis_version:(\S+)/.exec(info)?.[1] ?? "?",
      ioredis: packageVersion("ioredis"),
      nodeRedis: packageVersion("redis"),
      bentocache: packageVersion("bentocache"),
      cachified: packageVersion("@epic-web/cachified"),
      pinning: o.pin ? "redis-server on core 0, each client process on core 1 (taskset)" : "none",
      server: server === undefined ? "REDIS_URL" : "disposable redis-server (--save '' --appendonly no)",
      loadBefore: loadAverage(),
      loadAfter: undefined as number | undefined,
      reps: o.reps,
      warmupMs: o.warmupMs,
      durationMs: o.durationMs,
      command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
    };
    log(
      `herdless bench ${env.date}: ${env.nproc} x ${env.cpu}; Node ${env.node}, Bun ${
        env.bun ?? "-"
      }, Redis ${env.redis}, ioredis ${env.ioredis}, node-redis ${env.nodeRedis}; ${env.pinning}`,
    );

    const jobs = plan(o, bun, url, nearWhy, server?.pid);
    const series: Series[] = [];
    let layers: string[] | undefined;
    const configs: Partial<Record<CacheName, string>> = {};
    const started = Date.now();
    for (let i = 0; i < jobs.length; i++) {
      const job = jobs[i]!;
      const r = await runJob(job, o, bun);
      const name = job.series ?? job.task.scenario;
      let s = series.find((x) =>
        x.runtime === job.runtime && x.scenario === name &&
        x.client === job.task.client
      );
      if (s === undefined) {
        s = {
          runtime: job.runtime,
          scenario: name,
          client: job.task.client,
          opsPerSec: [],
          peakRssBytes: [],
          clientBusy: [],
          serverBusy: [],
          errors: [],
        };
        series.push(s);
      }
      if (r.layers !== undefined) layers = r.layers;
      if (r.config !== undefined) {
        configs[job.task.client as CacheName] = r.config;
      }
      if (r.error !== undefined) s.errors.push(r.error);
      else {
        s.opsPerSec.push(r.opsPerSec);
        s.peakRssBytes.push(r.peakRssBytes);
        if (r.clientCpuMs !== undefined) {
          s.clientBusy.push(r.clientCpuMs / r.elapsedMs);
        }
        if (r.serverCpuMs !== undefined) {
          s.serverBusy.push(r.serverCpuMs / r.elapsedMs);
        }
      }
      const busy = (
        ms: number | undefined,
      ) => (ms === undefined ? "-" : `${Math.round((ms * 100) / r.elapsedMs)}%`);
      const what = r.error !== undefined
        ? `error: ${r.error}`
        : `${Math.round(r.opsPerSec).toLocaleString("en-US")} ops/s, peak RSS ${
          (r.peakRssBytes / 1048576).toFixed(1)
        } MiB, CPU busy client ${busy(r.clientCpuMs)} server ${busy(r.serverCpuMs)}`;
      log(
        `[${i + 1}/${jobs.length}] ${name} ${job.runtime} ${job.task.client} #${job.rep}: ${what}`,
      );
    }
    const { coherence, coherenceMethod } = await measureCoherence(
      o,
      url,
      nearWhy,
      log,
    );
    const memory = await measureMemory(o, url, nearWhy, log);
    const cache: CacheSection = {
      series,
      reps: o.reps,
      nearWhy: o.cache.length > 0 ? nearWhy : undefined,
      configs,
      coherence,
      coherenceMethod,
      memory,
    };

    const baseline = {
      node: runtimeBaseline(process.execPath),
      bun: bun === undefined ? undefined : runtimeBaseline(bun),
    };
    env.loadAfter = loadAverage();
    const spreads = series.filter((s) => s.opsPerSec.length > 1).map((s) => spread(s.opsPerSec));
    const noise = spreads.length === 0 ? undefined : median(spreads);
    log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);

    if (o.json) {
      process.stdout.write(
        JSON.stringify(
          {
            env,
            noise,
            runtimeBaselineRssBytes: baseline,
            series,
            pipelineLayers: layers,
            targets: targets(series, o.only),
            matrix: o.matrix ? MATRIX : undefined,
            cache: {
              nearUnavailable: nearWhy ?? null,
              configs,
              coherence,
              memory,
              targets: cacheTargets(cache),
            },
          },
          null,
          2,
        ) + "\n",
      );
    } else {
      const mib = (
        b: number | undefined,
      ) => (b === undefined ? "-" : `${(b / 1048576).toFixed(1)} MiB`);
      process.stdout.write(
        [
          "",
          `Date: ${env.date}`,
          `Machine: ${env.nproc} x ${env.cpu}; ${env.pinning}; load average ${env.loadBefore ?? "?"} before, ${
            env.loadAfter ?? "?"
          } after (${env.nproc} cores)`,
          `Versions: Node ${env.node}, Bun ${
            env.bun ?? "-"
          }, Redis ${env.redis} (${env.server}), ioredis ${env.ioredis}, node-redis ${env.nodeRedis}, bentocache ${env.bentocache}, @epic-web/cachified ${env.cachified}`,
          `Each figure: ${env.reps} repetition(s), ${env.warmupMs} ms warm-up then ${env.durationMs} ms measured, one OS process per client, scenario and repetition, clients interleaved`,
          `Runtime alone (empty process) peak RSS: Node ${mib(baseline.node)}, Bun ${mib(baseline.bun)}`,
          ...(noise === undefined ? [] : [
            `Noise: the median spread (max - min) / median between repetitions is ${Math.round(noise * 100)}%`,
          ]),
          `Command: ${env.command}`,
          ...(layers === undefined
            ? []
            : [`Full pipeline: pipeline({ ttlMs: 600000 }, ${layers.map((l) => `${l}()`).join(", ")}), default codec`]),
          "",
          markdown(series, o.reps, o.only),
          "",
          ...(o.matrix ? [matrixMarkdown(series, o.reps), ""] : []),
          cacheMarkdown(cache),
          "",
        ].join("\n"),
      );
    }
  } finally {
    if (server !== undefined) await server.stop();
    else await removeBenchKeys(url);
  }
}

/**
 * Coherence lag, herdless and node-redis: the writer beside the server on
 * core 0 (it idles between writes), the reader alone on core 1.
 */
async function measureCoherence(
  o: Options,
  url: string,
  nearWhy: string | undefined,
  log: (line: string) => void,
): Promise<
  { coherence: CoherenceResult[] | undefined; coherenceMethod: string }
> {
  const coherenceMethod = `${o.writes.toLocaleString("en-US")} paced writes of one hot key (the next write only ` +
    `once the reader saw the last, or after 1 s); ${
      o.pin ? "writer pinned to core 0 with the server, reader to core 1" : "nothing pinned"
    }; lag = the reader's first read returning the new version (stamped when that read resolved) - the writer's ` +
    `write resolved; both stamped with process.hrtime.bigint() (CLOCK_MONOTONIC: one clock for every process on ` +
    `the machine, checked against the parent's stamps around each child's start); "from send" starts at the ` +
    `writer's stamp before the write.`;
  if (!o.coherence || !o.node) return { coherence: undefined, coherenceMethod };
  const coherence: CoherenceResult[] = [];
  for (const variant of COHERENCE_VARIANTS) {
    if (variant === "herdless" && nearWhy !== undefined) {
      const none = { lagUs: [], fromSendUs: [], timeouts: 0, clockCheck: "-" };
      coherence.push({ variant, writes: o.writes, ...none, error: nearWhy });
      continue;
    }
    log(`coherence ${variant}: ${o.writes} paced writes`);
    const r = await runCoherence(
      workerPath,
      variant,
      url,
      o.writes,
      o.pin ? { writer: "0", reader: "1" } : {},
    );
    const us = (
      x: number | undefined,
    ) => (x === undefined ? "-" : `${x.toFixed(0)} µs`);
    log(
      `coherence ${variant}: ${
        r.error ??
          `${r.lagUs.length} observed, p50 ${us(r.lagUs[r.lagUs.length >> 1])}, max ${
            us(r.lagUs.at(-1))
          }, ${r.timeouts} timeouts, clock check ${r.clockCheck}`
      }`,
    );
    coherence.push(r);
  }
  return { coherence, coherenceMethod };
}

/** Near-tier memory, herdless and node-redis, each in its own Node process with --expose-gc, pinned to core 1. */
async function measureMemory(
  o: Options,
  url: string,
  nearWhy: string | undefined,
  log: (line: string) => void,
): Promise<MemoryResult[] | undefined> {
  if (!o.memory || !o.node) return undefined;
  const memory: MemoryResult[] = [];
  for (const variant of MEMORY_VARIANTS) {
    if (variant === "herdless" && nearWhy !== undefined) {
      memory.push({ variant, entries: o.entries, steps: [], error: nearWhy });
      continue;
    }
    log(`memory ${variant}: ${o.entries} entries`);
    const bExpiresAt = await populateMemory(url, variant, o.entries);
    const r = await runMemory({
      kind: "memory",
      variant,
      url,
      entries: o.entries,
      bExpiresAt,
    }, o.pin);
    log(
      `memory ${variant}: ${
        r.error ??
          r.steps.map((s) => `${s.step}: ${s.trackingKeys} tracked`).join("; ")
      }`,
    );
    memory.push(r);
  }
  return memory;
}

function runMemory(task: MemoryTask, pin: boolean): Promise<MemoryResult> {
  const args = ["--expose-gc", workerPath, JSON.stringify(task)];
  const [cmd, argv] = pin && hasTaskset
    ? ["taskset", ["-c", "1", process.execPath, ...args]]
    : [process.execPath, args];
  return new Promise((resolve) => {
    const child = spawn(cmd, argv, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err = (err + d).slice(-2000)));
    const limit = setTimeout(() => child.kill("SIGKILL"), 300_000);
    child.on("close", (code) => {
      clearTimeout(limit);
      try {
        const r = JSON.parse(out.trim().split("\n").pop() ?? "") as Partial<
          MemoryResult
        >;
        resolve({
          variant: task.variant,
          entries: task.entries,
          steps: [],
          ...r,
        });
      } catch {
        resolve({
          variant: task.variant,
          entries: task.entries,
          steps: [],
          error: `worker exited with ${code}: ${err.trim() || out.trim() || "no output"}`,
        });
      }
    });
  });
}

/** On a server the bench did not start, delete what it wrote (every key under `bench:`), so it is left as found. */
async function removeBenchKeys(url: string): Promise<void> {
  const redis = await connect(url);
  try {
    let cursor = "0";
    do {
      const [next, keys] = (await redis.send([
        "SCAN",
        cursor,
        "MATCH",
        "bench:*",
        "COUNT",
        1000,
      ])) as [
        string,
        string[],
      ];
      if (keys.length > 0) await redis.send(["UNLINK", ...keys]);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    await redis.close();
  }
}

await main();
