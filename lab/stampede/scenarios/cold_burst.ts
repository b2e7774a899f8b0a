/**
 * Scenario 1: a cold burst. Several OS processes, each with several pools
 * (one connection and one cache each), fire at one missing key at the same
 * instant. The processes are released together by a Redis barrier (each
 * blocks in BLPOP; one RPUSH wakes them all), and the origin counts its
 * calls in Redis, so "lease: 1 origin call across 4 processes" is a count,
 * not a claim. coalesce alone shows its limit here: one call per cache.
 *
 * Rows run one after another (a burst takes a fraction of a second), with
 * the same worker processes, each row under its own key namespace.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { connect } from "../../../resp/mod.ts";
import { dismiss, endWorkers, pop, startWorkers } from "../workers/children.ts";
import { combine } from "../workers/combine.ts";
import { type BurstCommand, burstKeys, type BurstReport } from "../workers/burst_protocol.ts";
import { checkRow } from "../rows/checks.ts";
import { describeRow, type LayerSettings, layerSettings, rowLabel, ROWS } from "../rows/layers.ts";
import type { RecipeId, RecipeSettings } from "../rows/sets.ts";
import type { LabContext, RowResult, Scenario, ScenarioResult } from "../types.ts";

const WORKER = fileURLToPath(new URL("../workers/burst_worker.ts", import.meta.url));
const BUCKET_MS = 10;

/** One row of a burst: a herdless layer row, or a recipe. */
export interface BurstRow {
  label: string;
  strategies: string;
  /** herdless' layer row (ignored for a recipe). */
  row: number;
  recipe?: RecipeId;
}

export const coldBurst: Scenario = {
  id: "cold-burst",
  title: "cold burst",
  run(ctx: LabContext): Promise<ScenarioResult> {
    const layers = layerSettings(10_000, { waitMs: 3000 });
    const rows = Array.from(
      { length: ROWS },
      (_, row) => ({ label: rowLabel(row), strategies: describeRow(row), row }),
    );
    return runBurst(ctx, this.id, this.title, layers, rows);
  },
};

/**
 * The cold burst for any rows: 4 processes x pools x 25 gets of one missing
 * key, one row after another. `recipe` settings go to the recipes' rows.
 */
export async function runBurst(
  ctx: LabContext,
  id: string,
  title: string,
  layers: LayerSettings,
  rowSpecs: BurstRow[],
  recipe?: RecipeSettings,
): Promise<ScenarioResult> {
  const processes = 4;
  const pools = ctx.quick ? 2 : 4;
  const perPool = 25;
  const originMs = 100;
  const durationMs = 300;
  const control = await connect({ url: ctx.url });
  const workers = startWorkers("cold burst", WORKER, processes, (i) => [ctx.url, String(i), String(pools)]);
  const inboxes = Array.from({ length: processes }, (_, i) => `lab-burst:cmd:${i}`);
  const rows: RowResult[] = [];
  const problems: string[] = [];
  try {
    ctx.progress(`${title}: starting ${processes} worker processes`);
    for (let i = 0; i < processes; i++) {
      await workers.race(pop(control, "lab-burst:hello", 30, "cold burst: a worker's hello"));
    }
    for (const [index, spec] of rowSpecs.entries()) {
      const row = spec.row;
      ctx.progress(`${title}: ${spec.label}`);
      const namespace = `lab-burst-${id}-r${index}`;
      const k = burstKeys(namespace);
      const cmd: BurstCommand = {
        row,
        namespace,
        layers,
        ttlMs: 10_000,
        originMs,
        requestsPerPool: perPool,
        timeoutMs: 3000,
        ...(spec.recipe === undefined ? {} : { recipe: spec.recipe, recipeSettings: recipe ?? { staleMs: 5000 } }),
      };
      for (let i = 0; i < processes; i++) await control.send(["RPUSH", `lab-burst:cmd:${i}`, JSON.stringify(cmd)]);
      for (let i = 0; i < processes; i++) {
        await workers.race(pop(control, k.ready, 20, "cold burst: a worker's ready"));
      }
      // One RPUSH of one token per worker: every blocked BLPOP is served by this single command.
      await control.send(["RPUSH", k.go, ...Array.from({ length: processes }, (_, i) => String(i))]);
      const reports: BurstReport[] = [];
      for (let i = 0; i < processes; i++) {
        reports.push(
          JSON.parse(await workers.race(pop(control, k.result, 20, "cold burst: a worker's report"))) as BurstReport,
        );
      }
      const [calls, peak] = (await control.send(["MGET", k.calls, k.peak])) as (string | null)[];
      const series = new Array<number>(Math.ceil(durationMs / BUCKET_MS)).fill(0);
      for (const r of reports) {
        for (const t of r.offsets) series[Math.min(series.length - 1, Math.max(0, Math.floor(t / BUCKET_MS)))]!++;
      }
      const sum = (f: (r: BurstReport) => number) => reports.reduce((a, r) => a + f(r), 0);
      const result: RowResult = {
        set: spec.label,
        strategies: spec.strategies,
        requests: processes * pools * perPool,
        originCalls: Number(calls ?? 0),
        originErrors: 0,
        peakConcurrent: Number(peak ?? 0),
        ...combine(reports),
        series,
        commands: sum((r) => r.commands),
        // One key read once per request, nothing served before the burst: no older value to go back to.
        older: 0,
      };
      rows.push(result);
      problems.push(...checkRow(title, result, 0, sum((r) => r.ok + r.errors + r.timeouts)));
      await control.send(["DEL", ...Object.values(k)]);
    }
    await dismiss(workers, control, inboxes);
  } finally {
    await endWorkers(workers, control, ["lab-burst:hello", ...inboxes]);
  }
  return {
    id,
    title,
    setup: `${processes} processes x ${pools} pools x ${perPool} requests = ${
      processes * pools * perPool
    } concurrent gets of 1 missing key, released by a Redis barrier`,
    origin: `simulated origin: ${originMs} ms, in each worker process, calls counted in Redis (INCR)`,
    bucketMs: BUCKET_MS,
    durationMs,
    marks: [],
    rows,
    problems,
  };
}
