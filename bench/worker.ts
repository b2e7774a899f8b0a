/**
 * One measurement in its own OS process: one client, one scenario, one
 * repetition. It prints a single JSON line (a {@linkcode WorkerResult}) on
 * stdout, so the parent can pin it to a core and read its peak RSS alone.
 *
 *   node bench/.out/worker.mjs '{"client":"ours","scenario":"get-100",...}'
 *
 * @module
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { getHeapSpaceStatistics } from "node:v8";
import { type CacheName, openCache } from "./caches.ts";
import { type ClientName, openClient } from "./clients.ts";
import { coherenceReader, type CoherenceTask, coherenceWriter } from "./coherence.ts";
import { prepareHit } from "./hit.ts";
import { type MemoryTask, memoryWorker } from "./memory.ts";
import {
  type CacheScenario,
  clientLoop,
  IN_FLIGHT,
  lanes,
  measure,
  type ScenarioName,
  type Shape,
} from "./scenarios.ts";

/** What the parent asks of a worker. */
export interface WorkerTask {
  /** A cache name (see caches.ts) when `scenario` is a cache scenario. */
  client: ClientName | "pipeline" | "raw-get" | CacheName;
  scenario: ScenarioName | CacheScenario;
  url: string;
  warmupMs: number;
  durationMs: number;
  resp: 2 | 3;
  /** The redis-server's pid, to read its CPU time over the window (a local server only). */
  serverPid?: number;
  /** The second method's sizes (bench/matrix.ts) instead of the scenario's fixed ones. */
  shape?: Shape;
}

/** What a worker reports. */
export interface WorkerResult {
  client: WorkerTask["client"];
  scenario: WorkerTask["scenario"];
  runtime: "node" | "bun";
  ops: number;
  elapsedMs: number;
  opsPerSec: number;
  /** CPU time of this process over the measured window. */
  clientCpuMs?: number;
  /** CPU time of the server over the measured window. */
  serverCpuMs?: number;
  /** VmHWM: the process' peak resident set. */
  peakRssBytes: number;
  /** VmRSS before any client code ran: the runtime alone. */
  baseRssBytes: number;
  /** V8 heap spaces' physical sizes at the end, in bytes (Node only): where the peak went. */
  heapSpaces?: Record<string, number> | undefined;
  layers?: string[];
  /** How a cache of the cache-level table was configured. */
  config?: string;
  error?: string;
}

const runtime: WorkerResult["runtime"] = "Bun" in globalThis ? "bun" : "node";

function heapSpaces(): Record<string, number> | undefined {
  if (runtime !== "node") return undefined;
  const out: Record<string, number> = {};
  for (const s of getHeapSpaceStatistics()) {
    out[s.space_name] = s.physical_space_size;
  }
  return out;
}

/** Peak (`VmHWM`) or current (`VmRSS`) resident set of this process, in bytes. */
function rss(field: "VmHWM" | "VmRSS"): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(
      readFileSync("/proc/self/status", "utf8"),
    );
    if (match) return Number(match[1]) * 1024;
  } catch {
    // Not Linux: fall back below.
  }
  return field === "VmHWM" ? process.resourceUsage().maxRSS * 1024 : process.memoryUsage().rss;
}

/**
 * Measure hits: `run` for the task's window, then close `source` and fail if
 * its loader ran meanwhile, since a figure of hits must hold hits only.
 */
async function measureHits(
  task: WorkerTask,
  run: (ms: number) => Promise<number>,
  source: { loads(): number; close(): Promise<void> },
) {
  const loadsBefore = source.loads();
  const m = await measure(run, task.warmupMs, task.durationMs, task.serverPid);
  const extra = source.loads() - loadsBefore;
  await source.close();
  if (extra > 0) throw new Error(`the loader ran ${extra} times while measuring hits: not a hit path`);
  return {
    ...m,
    opsPerSec: (m.ops * 1000) / m.elapsedMs,
    peakRssBytes: rss("VmHWM"),
    heapSpaces: heapSpaces(),
  };
}

async function run(
  task: WorkerTask,
  baseRssBytes: number,
): Promise<WorkerResult> {
  const base = {
    client: task.client,
    scenario: task.scenario,
    runtime,
    baseRssBytes,
  };
  if (task.scenario === "cache-100" || task.scenario === "cache-seq") {
    const cache = await openCache(task.client as CacheName, task.url);
    const inFlight = task.scenario === "cache-seq" ? 1 : IN_FLIGHT;
    const m = await measureHits(task, lanes(inFlight, (i) => cache.get(i)), cache);
    return { ...base, ...m, config: cache.config };
  }
  if (task.client === "pipeline" || task.client === "raw-get") {
    const hit = await prepareHit(
      task.client,
      task.url,
      task.scenario === "hit-seq" ? 1 : 100,
    );
    const m = await measureHits(task, hit.run, hit);
    return { ...base, ...m, layers: hit.layers };
  }
  const client = await openClient(
    task.client as ClientName,
    task.url,
    task.resp,
  );
  const loop = clientLoop(task.scenario as ScenarioName, client, task.shape);
  const m = await measure(loop, task.warmupMs, task.durationMs, task.serverPid);
  await client.close();
  return {
    ...base,
    ...m,
    opsPerSec: (m.ops * 1000) / m.elapsedMs,
    peakRssBytes: rss("VmHWM"),
    heapSpaces: heapSpaces(),
  };
}

const baseRssBytes = rss("VmRSS");
const raw = JSON.parse(process.argv[2] ?? "{}") as
  | WorkerTask
  | CoherenceTask
  | MemoryTask;
if ("kind" in raw) {
  // The coherence roles talk to the parent line by line; the memory worker prints one JSON line.
  try {
    if (raw.kind === "coherence") {
      await (raw.role === "reader" ? coherenceReader(raw) : coherenceWriter(raw));
    } else process.stdout.write(JSON.stringify(await memoryWorker(raw)) + "\n");
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stdout.write(
      raw.kind === "coherence" ? `error ${message}\n` : JSON.stringify({ error: message }) + "\n",
    );
  }
  process.exit(0);
}
const task = raw;
let result: WorkerResult;
try {
  result = await run(task, baseRssBytes);
} catch (error) {
  result = {
    client: task.client,
    scenario: task.scenario,
    runtime,
    ops: 0,
    elapsedMs: 0,
    opsPerSec: 0,
    peakRssBytes: rss("VmHWM"),
    baseRssBytes,
    error: error instanceof Error ? error.message : String(error),
  };
}
process.stdout.write(JSON.stringify(result) + "\n");
// Bun's client and node-redis may keep timers alive: the measurement is over.
process.exit(0);
