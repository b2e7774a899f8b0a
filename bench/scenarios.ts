/**
 * The workloads, each a timed loop: a warm-up that is thrown away (so the
 * JIT has compiled the hot path), then a measured window. Keys and values are
 * built before the clock starts, so every client pays the same for them.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import type { BenchClient } from "./clients.ts";

/** Scenario names, in the order they are run and printed. */
export const SCENARIOS = [
  "get-seq",
  "get-100",
  "set-batch",
  "script-100",
  "hit-seq",
  "hit-100",
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/** The cache-level table's scenarios: every cache's hit path, 100 in flight and sequential. */
export const CACHE_SCENARIOS = ["cache-100", "cache-seq"] as const;
export type CacheScenario = (typeof CACHE_SCENARIOS)[number];

/** The cache-level measurements beside the table: coherence lag and near-tier memory. */
export const CACHE_EXTRAS = ["coherence", "memory"] as const;

/** Names `--only` accepts besides single scenarios. */
export const GROUPS: Record<string, readonly string[]> = {
  client: ["get-seq", "get-100", "set-batch", "script-100"],
  hit: ["hit-seq", "hit-100"],
  cache: [...CACHE_SCENARIOS, ...CACHE_EXTRAS],
};

/** What each scenario means, for the table. */
export const DESCRIPTIONS: Record<ScenarioName, string> = {
  "get-seq": "GET, sequential (1 in flight)",
  "get-100": "GET, 100 in flight",
  "set-batch": "SET, batches of 1,000",
  "script-100": "EVALSHA small script, 100 in flight",
  "hit-seq": "cache hit, sequential",
  "hit-100": "cache hit, 100 in flight",
};

/** Commands in flight in the `-100` scenarios. */
export const IN_FLIGHT = 100;
/** Commands per batch in `set-batch`. */
export const BATCH = 1_000;
/** Distinct keys read by the GET, script and hit scenarios. */
export const KEYS = 1_000;
/** Bytes in every value written or read. */
export const VALUE_SIZE = 64;

export const VALUE = "v".repeat(VALUE_SIZE);
export const getKeys: readonly string[] = Array.from(
  { length: KEYS },
  (_, i) => `bench:get:${i}`,
);
// Ten batches of distinct keys, cycled, so the server's keyspace stays small.
const setBatches: readonly (readonly string[])[] = Array.from(
  { length: 10 },
  (_, b) => Array.from({ length: BATCH }, (_, i) => `bench:set:${b * BATCH + i}`),
);

/** Counted operations over a measured window, and the CPU time spent on them. */
export interface Measurement {
  ops: number;
  elapsedMs: number;
  /** This process' CPU time (user + system) over the window. */
  clientCpuMs: number;
  /** The server's CPU time over the window, when its pid was given and /proc is readable. */
  serverCpuMs?: number;
}

/** CPU time (user + system) of another process from /proc, in ms; undefined when unreadable. */
function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name, which may itself hold spaces: utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}
// USER_HZ: 100 on every Linux architecture Node and Bun run on.
const CLOCK_TICKS = 100;

/** Warm up for `warmupMs`, then measure for `durationMs`. */
export async function measure(
  run: (ms: number) => Promise<number>,
  warmupMs: number,
  durationMs: number,
  serverPid?: number,
): Promise<Measurement> {
  if (warmupMs > 0) await run(warmupMs);
  const server0 = processCpuMs(serverPid);
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const ops = await run(durationMs);
  const elapsedMs = performance.now() - start;
  const cpu = process.cpuUsage(cpu0);
  const server1 = processCpuMs(serverPid);
  const m: Measurement = {
    ops,
    elapsedMs,
    clientCpuMs: (cpu.user + cpu.system) / 1000,
  };
  if (server0 !== undefined && server1 !== undefined) {
    m.serverCpuMs = server1 - server0;
  }
  return m;
}

/**
 * `lanes` loops, each awaiting one operation before issuing the next, so
 * exactly `lanes` operations are in flight until the window closes. Every
 * operation issued is counted once it completes, including the last few that
 * finish after the deadline (the elapsed time covers them too).
 */
export function lanes(
  count: number,
  op: (i: number) => Promise<unknown>,
): (ms: number) => Promise<number> {
  return async (ms) => {
    const end = performance.now() + ms;
    let done = 0;
    let next = 0;
    async function lane(): Promise<void> {
      while (performance.now() < end) {
        await op(next++);
        done++;
      }
    }
    const all: Promise<void>[] = [];
    for (let i = 0; i < count; i++) all.push(lane());
    await Promise.all(all);
    return done;
  };
}

/**
 * What the second method varies (bench/matrix.ts), one factor at a time:
 * the value size, the commands in flight (the `-100` scenarios) and how many
 * distinct keys are read, or written in `set-batch`.
 */
export interface Shape {
  valueSize: number;
  inFlight: number;
  keys: number;
}

/** The keys a shape reads (seeded by the parent with `"v".repeat(valueSize)`). */
export function shapeKeys(shape: Shape): string[] {
  return Array.from(
    { length: shape.keys },
    (_, i) => `bench:m:${shape.valueSize}:${shape.keys}:${i}`,
  );
}

/** The loop for a client scenario (everything but the cache-hit ones); `shape` replaces the fixed sizes. */
export function clientLoop(
  scenario: ScenarioName,
  client: BenchClient,
  shape?: Shape,
): (ms: number) => Promise<number> {
  const keys = shape === undefined ? getKeys : shapeKeys(shape);
  const n = keys.length;
  const inFlight = shape?.inFlight ?? IN_FLIGHT;
  switch (scenario) {
    case "get-seq":
      return lanes(1, (i) => client.get(keys[i % n]!));
    case "get-100":
      return lanes(inFlight, (i) => client.get(keys[i % n]!));
    case "script-100":
      return lanes(inFlight, (i) => client.script(keys[i % n]!));
    case "set-batch": {
      const batches = shape === undefined ? setBatches : Array.from(
        { length: Math.max(1, Math.floor(shape.keys / BATCH)) },
        (_, b) =>
          Array.from(
            { length: BATCH },
            (_, i) => `bench:set:m:${b * BATCH + i}`,
          ),
      );
      const value = shape === undefined ? VALUE : "v".repeat(shape.valueSize);
      return async (ms) => {
        const end = performance.now() + ms;
        let done = 0;
        for (let b = 0; performance.now() < end; b++) {
          const batch = batches[b % batches.length]!;
          await client.setBatch(batch, value);
          done += batch.length;
        }
        return done;
      };
    }
    default:
      throw new Error(`${scenario} is not a client scenario`);
  }
}
