/**
 * The engine of the steady-load scenarios: every strategy set gets its own
 * pools (one connection and one cache each, like separate app instances),
 * its own simulated origin and its own key namespace, and all sets run at
 * the same time on the same clock. Running them side by side keeps the full
 * lab inside its time budget and exposes every set to the same moment of
 * machine noise; separate origins and namespaces keep their counts apart.
 *
 * Keys are warmed before the clock starts (those fills are not counted), so
 * what the table shows is what the steady state and its expiries cost.
 *
 * @module
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { clearInterval, clearTimeout, setInterval, setTimeout } from "node:timers";
import { connect, type RedisClient } from "../../../resp/mod.ts";
import type { CacheStats } from "../../../mod.ts";
import { seeded, zipf } from "../../shared/zipf.ts";
import { addStats, checkRow, subStats } from "../rows/checks.ts";
import { type Counted, counted } from "../rows/counting.ts";
import { type LayerSettings, ROWS } from "../rows/layers.ts";
import { type LabSet, layerSet, type SetCache } from "../rows/sets.ts";
import { type LoadResult, percentiles, runLoad } from "./open_loop.ts";
import { type OriginOptions, SimOrigin } from "./origin.ts";
import type { LabContext, Mark, RowResult, ScenarioResult } from "../types.ts";

/** One steady-load scenario's settings. */
export interface SteadySpec {
  id: string;
  title: string;
  setup: string;
  /** Pools (connection + cache) per strategy set; requests go round-robin. */
  pools: number;
  ratePerSec: number;
  durationMs: number;
  ttlMs: number;
  /** Distinct keys; requests pick one at random (the same sequence for every set). */
  keys: number;
  /** Zipf exponent of key popularity (real caches are skewed: a few keys take most reads); 0: uniform. @default {0} */
  zipf?: number;
  origin: Omit<OriginOptions, "bucketMs" | "buckets">;
  bucketMs: number;
  /** Each get's timeoutMs. */
  timeoutMs: number;
  layers: LayerSettings;
  marks?: Mark[];
  /** Things done to the world at a moment of the run (FLUSHALL). */
  events?: { atMs: number; run: () => Promise<void> }[];
  /** Which pool serves request `i`. @default {i % pools} */
  poolOf?: (i: number) => number;
  /** The rows. @default {herdless' layer sets, none to the full pipeline} */
  sets?: LabSet[];
  /** Fill every key before the clock starts. @default {true} */
  warm?: boolean;
  /** How long requests may still run after the last is issued. @default {timeoutMs + 2000} */
  drainMs?: number;
  /** The first origin call of each row started at or after `atMs` pauses `ms` once it has its value, before returning it (a GC or VM pause of the owner). */
  pause?: { atMs: number; ms: number };
}

interface Row {
  readonly index: number;
  readonly set: LabSet;
  readonly redis: RedisClient[];
  readonly counted: Counted<RedisClient>[];
  readonly caches: SetCache[];
  readonly origin: SimOrigin;
  readonly loader: () => Promise<string>;
  /** Per key, the newest version any request of this row has been answered with. */
  readonly served: Map<number, number>;
  /** When each version's origin call returned its value (version 0, the warm-up's: the clock's start). */
  readonly loadedAt: Map<number, number>;
  /** Requests answered with a value loaded more than the TTL before they started. */
  pastTtl: number;
  /** Each origin call's start and end, ms since the clock started. */
  readonly loads: [number, number][];
  t0: number;
  older: number;
  sentBefore: number;
  before?: CacheStats;
}

// The simulated origin answers `value-<n>`, n counting its calls (the warm-up's "warm" is 0).
function version(value: string): number {
  return value.startsWith("value-") ? Number(value.slice(6)) : 0;
}

function sent(row: Row): number {
  return row.counted.reduce((a, c) => a + c.sent(), 0);
}

function totals(row: Row): CacheStats {
  return row.caches.map((c) => c.stats()).reduce(addStats);
}

async function openRow(ctx: LabContext, spec: SteadySpec, set: LabSet, index: number): Promise<Row> {
  const buckets = Math.ceil((spec.durationMs + spec.timeoutMs) / spec.bucketMs);
  const origin = new SimOrigin({ ...spec.origin, bucketMs: spec.bucketMs, buckets });
  const redis = await Promise.all(Array.from({ length: spec.pools }, () => connect({ url: ctx.url, resp: 3 })));
  const wrapped = redis.map((r) => counted(r));
  const namespace = `lab-${spec.id}-r${index}`;
  const caches = wrapped.map((c, pool) => set.open(c.redis, pool, namespace, spec.ttlMs, false));
  let paused = false;
  const row: Row = {
    index,
    set,
    redis,
    counted: wrapped,
    caches,
    origin,
    served: new Map(),
    loadedAt: new Map(),
    pastTtl: 0,
    loads: [],
    t0: Infinity,
    older: 0,
    sentBefore: 0,
    loader: async () => {
      const pause = spec.pause !== undefined && !paused && performance.now() - row.t0 >= spec.pause.atMs;
      if (pause) paused = true;
      const started = performance.now();
      const value = await origin.call();
      row.loadedAt.set(version(value), performance.now());
      if (started >= row.t0) row.loads.push([started - row.t0, performance.now() - row.t0]);
      if (pause) await new Promise((r) => setTimeout(r, spec.pause!.ms));
      return value;
    },
  };
  return row;
}

// Fill every key at once through a cache with the row's write strategies
// (jitter, swr windows) but without limit(), which would shed the burst.
// The warm loader takes the origin's base time (so xfetch records a real
// load time) without touching the simulated origin: a slowing origin would
// make the warm-up itself a stampede, and warm-up is not what is measured.
//
// Thousands of keys times seven sets in one burst can queue Redis replies
// past a second on a busy machine, so keys go in chunks of WARM_CHUNK (all
// still written within a few hundred ms) with a generous command timeout:
// a slow warm-up is not a failure of the lab.
const WARM_CHUNK = 250;
async function warm(spec: SteadySpec, row: Row): Promise<void> {
  const loader = () => new Promise<string>((resolve) => setTimeout(() => resolve("warm"), spec.origin.baseMs));
  const cache = row.set.open(row.redis[0]!, 0, `lab-${spec.id}-r${row.index}`, spec.ttlMs, true);
  try {
    for (let first = 0; first < spec.keys; first += WARM_CHUNK) {
      const count = Math.min(WARM_CHUNK, spec.keys - first);
      await Promise.all(Array.from({ length: count }, (_, k) => cache.get(first + k, loader, 20_000)));
    }
  } finally {
    await cache.close();
  }
}

/** Run every strategy set through one steady-load scenario, side by side. */
export async function runSteady(ctx: LabContext, spec: SteadySpec): Promise<ScenarioResult> {
  const sets = spec.sets ?? Array.from({ length: ROWS }, (_, i) => layerSet(i, spec.layers));
  const rows = await Promise.all(sets.map((set, i) => openRow(ctx, spec, set, i)));
  const results: RowResult[] = [];
  const problems: string[] = [];
  let ticker: ReturnType<typeof setInterval> | undefined;
  const timers: ReturnType<typeof setTimeout>[] = [];
  // How late this process's event loop ran: latencies below it are the machine, not the cache.
  const loop = monitorEventLoopDelay({ resolution: 5 });
  try {
    // Warm every key in every set together: "written together" is part of the story.
    if (spec.warm ?? true) {
      ctx.progress(`${spec.title}: warming ${spec.keys} key(s)`);
      await Promise.all(rows.map((row) => warm(spec, row)));
    }
    loop.enable();
    const t0 = performance.now();
    for (const row of rows) {
      row.t0 = t0;
      row.loadedAt.set(0, t0);
      row.origin.start(t0);
      row.before = totals(row);
      row.sentBefore = sent(row);
    }
    const events = (spec.events ?? []).map(
      (e) =>
        new Promise<void>((resolve, reject) => timers.push(setTimeout(() => e.run().then(resolve, reject), e.atMs))),
    );
    ticker = setInterval(() => {
      const s = ((performance.now() - t0) / 1000).toFixed(1);
      ctx.progress(
        `${spec.title}, ${s} of ${spec.durationMs / 1000} s; origin calls so far: ${
          rows.map((r) => `${r.set.label.replace(/^\+ | \(full\)$/g, "")} ${r.origin.calls}`).join(", ")
        }`,
      );
    }, 200);
    const loads: LoadResult[] = await Promise.all(
      rows.map((row) => {
        const pick = zipf(spec.keys, spec.zipf ?? 0, seeded(spec.keys * 7919 + spec.ratePerSec));
        return runLoad({
          t0,
          ratePerSec: spec.ratePerSec,
          durationMs: spec.durationMs,
          maxOutstanding: Math.max(1000, spec.ratePerSec * 2),
          drainMs: spec.drainMs ?? spec.timeoutMs + 2000,
          request: (i) => {
            const key = pick();
            const newest = row.served.get(key) ?? 0;
            const started = performance.now();
            return row.caches[spec.poolOf?.(i) ?? i % spec.pools]!.get(key, row.loader, spec.timeoutMs).then(
              (value) => {
                // Older than a version some request had already been answered with before this one started.
                const v = version(value);
                if (v < newest) row.older++;
                // Past its TTL on the true clock, whatever the cache believed (skewed clocks, jitter above the TTL, swr).
                if (started - (row.loadedAt.get(v) ?? started) > spec.ttlMs) row.pastTtl++;
                if (v > (row.served.get(key) ?? 0)) row.served.set(key, v);
              },
            );
          },
        });
      }),
    );
    await Promise.all(events);
    loop.disable();
    clearInterval(ticker);
    ctx.progress(`${spec.title}: draining background refreshes`);
    // close() waits for loads and refreshes still running, so the origin's counts are final after it.
    await Promise.all(rows.flatMap((row) => row.caches.map((c) => c.close())));
    for (const row of rows) {
      const load = loads[row.index]!;
      const stats = subStats(totals(row), row.before!);
      const result: RowResult = {
        set: row.set.label,
        strategies: row.set.strategies,
        requests: load.issued,
        originCalls: row.origin.calls,
        originErrors: row.origin.errors,
        peakConcurrent: row.origin.peak,
        latency: percentiles(load.latencies),
        stale: stats.stale,
        errors: load.errors,
        timeouts: load.timeouts,
        dropped: load.dropped,
        series: row.origin.series,
        stats,
        errorSamples: load.errorSamples,
        commands: sent(row) - row.sentBefore,
        older: row.older,
        pastTtl: row.pastTtl,
        loads: row.loads,
      };
      results.push(result);
      problems.push(...checkRow(spec.title, result, load.hung, load.ok + load.errors + load.timeouts));
    }
  } finally {
    clearInterval(ticker);
    for (const t of timers) clearTimeout(t);
    for (const row of rows) for (const r of row.redis) r.destroy();
  }
  return {
    id: spec.id,
    title: spec.title,
    setup: spec.setup,
    origin: describeOrigin(spec.origin),
    bucketMs: spec.bucketMs,
    durationMs: spec.durationMs,
    marks: spec.marks ?? [],
    rows: results,
    problems,
    loopDelay: { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
  };
}

/** The origin's label for the table and the chart: it is a simulation and says so. */
export function describeOrigin(o: Omit<OriginOptions, "bucketMs" | "buckets">): string {
  const slow = o.slowdown ? `, x(1 + ${o.slowdown} * in-flight)` : "";
  return `simulated origin: ${o.baseMs} ms${slow}, in-process`;
}
