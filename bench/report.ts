/**
 * Medians, ratios and the client's performance targets, as a Markdown table
 * (what bench/results/ keeps) or as JSON.
 *
 * @module
 */
import { fmtMiB, fmtRatio, table } from "./markdown.ts";
import { DESCRIPTIONS, type ScenarioName, SCENARIOS } from "./scenarios.ts";
import type { WorkerResult } from "./worker.ts";

/** One row of the plan's outcome: every repetition of one client on one scenario. */
export interface Series {
  runtime: WorkerResult["runtime"];
  /** The scenario, or a second-method row's id (bench/matrix.ts). */
  scenario: WorkerResult["scenario"] | string;
  client: WorkerResult["client"];
  opsPerSec: number[];
  peakRssBytes: number[];
  /** Share of one core the client process used over each window. */
  clientBusy: number[];
  /** Share of one core the server used over each window (a local server only). */
  serverBusy: number[];
  errors: string[];
}

/** A target from the issue and whether this run met it. */
export interface TargetResult {
  name: string;
  /** The measured ratio of medians, or undefined when a side is missing. */
  ratio: number | undefined;
  /**
   * The ratio of each side's best repetition (highest ops/s, lowest RSS).
   * Other processes only ever slow a run down, so on a shared machine this
   * is the closer estimate of a quiet one; the verdict still uses medians.
   */
  best: number | undefined;
  want: string;
  met: boolean | undefined;
  note?: string;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** (max - min) / median, the spread of the repetitions. */
export function spread(values: readonly number[]): number {
  if (values.length < 2) return 0;
  return (Math.max(...values) - Math.min(...values)) / median(values);
}

function find(
  series: readonly Series[],
  runtime: string,
  scenario: ScenarioName,
  client: string,
): Series | undefined {
  return series.find((s) => s.runtime === runtime && s.scenario === scenario && s.client === client);
}

function opsOf(
  series: readonly Series[],
  runtime: string,
  scenario: ScenarioName,
  client: string,
  pick = median,
): number | undefined {
  const s = find(series, runtime, scenario, client);
  if (s === undefined || s.opsPerSec.length === 0) return undefined;
  return pick(s.opsPerSec);
}

/** The best of several repetitions: the highest ops/s. */
export const best = (values: readonly number[]) => Math.max(...values);

/** The largest median peak RSS of a client over the client scenarios it ran. */
export function peakRss(
  series: readonly Series[],
  runtime: string,
  client: string,
  pick = median,
): number | undefined {
  let max: number | undefined;
  for (const s of series) {
    const scenario = s.scenario as ScenarioName;
    if (
      s.runtime !== runtime || s.client !== client ||
      s.peakRssBytes.length === 0
    ) continue;
    if (!SCENARIOS.includes(scenario) || scenario.startsWith("hit-")) continue;
    const m = pick(s.peakRssBytes);
    if (max === undefined || m > max) max = m;
  }
  return max;
}

/** `a / b`, or undefined when a side is missing or `b` is 0. */
export function ratio(
  a: number | undefined,
  b: number | undefined,
): number | undefined {
  return a === undefined || b === undefined || b === 0 ? undefined : a / b;
}

/** Evaluate every client target that this run has figures for. */
export function targets(
  series: readonly Series[],
  requested: readonly ScenarioName[] = SCENARIOS,
): TargetResult[] {
  const out: TargetResult[] = [];
  const atLeast = (
    name: string,
    r: [number | undefined, number | undefined],
    min: number,
    note?: string,
  ) =>
    out.push({
      name,
      ratio: r[0],
      best: r[1],
      want: `>= ${min.toFixed(2)}x`,
      met: r[0] === undefined ? undefined : r[0] >= min,
      ...(note ? { note } : {}),
    });
  const ops = (
    runtime: string,
    scenario: ScenarioName,
    a: string,
    b: string,
  ): [number | undefined, number | undefined] => [
    ratio(
      opsOf(series, runtime, scenario, a),
      opsOf(series, runtime, scenario, b),
    ),
    ratio(
      opsOf(series, runtime, scenario, a, best),
      opsOf(series, runtime, scenario, b, best),
    ),
  ];
  const has = (runtime: string, scenario: ScenarioName) =>
    series.some((s) => s.runtime === runtime && s.scenario === scenario);
  // The client's targets against node-redis: ahead of the most used Node client in every scenario, by a margin.
  const vsNodeRedis: [ScenarioName, number][] = [
    ["get-seq", 1.05],
    ["get-100", 2.0],
    ["set-batch", 1.5],
    ["script-100", 1.5],
  ];
  for (const [scenario, min] of vsNodeRedis) {
    if (!has("node", scenario)) continue;
    atLeast(
      `${DESCRIPTIONS[scenario]}: ours / node-redis`,
      ops("node", scenario, "ours", "node-redis"),
      min,
    );
  }
  for (
    const scenario of ["get-seq", "get-100", "set-batch", "script-100"] as const
  ) {
    if (!has("bun", scenario)) continue;
    atLeast(
      `Bun, ${DESCRIPTIONS[scenario]}: ours / Bun RedisClient`,
      ops("bun", scenario, "ours", "bun"),
      1.0,
    );
  }
  const rss = ratio(
    peakRss(series, "node", "ours"),
    peakRss(series, "node", "node-redis"),
  );
  const lowest = (values: readonly number[]) => Math.min(...values);
  const rssBest = ratio(
    peakRss(series, "node", "ours", lowest),
    peakRss(series, "node", "node-redis", lowest),
  );
  if (rss !== undefined) {
    out.push({
      name: "peak RSS (worst scenario): ours / node-redis",
      ratio: rss,
      best: rssBest,
      want: "<= 0.60x",
      met: rss <= 0.6,
    });
  }
  for (const scenario of ["hit-seq", "hit-100"] as const) {
    if (!requested.includes(scenario) || !has("node", scenario)) continue;
    const r = ops("node", scenario, "pipeline", "raw-get");
    atLeast(
      `${DESCRIPTIONS[scenario]}: full pipeline / raw GET`,
      r,
      0.85,
    );
  }
  return out;
}

const fmtOps = (n: number | undefined) =>
  n === undefined || !Number.isFinite(n)
    ? "-"
    : n >= 10_000
    ? `${Math.round(n / 1000).toLocaleString("en-US")}k`
    : `${(n / 1000).toFixed(1)}k`;
const verdict = (
  t: TargetResult | undefined,
) => (t === undefined ? "" : t.met === undefined ? "n/a" : t.met ? "MET" : "NOT MET");

function cell(
  series: readonly Series[],
  runtime: string,
  scenario: ScenarioName,
  client: string,
): string {
  const s = find(series, runtime, scenario, client);
  if (s === undefined) return "-";
  if (s.opsPerSec.length === 0) return s.errors.length > 0 ? "error" : "-";
  const sp = spread(s.opsPerSec);
  return `${fmtOps(median(s.opsPerSec))}${sp >= 0.1 ? ` (±${Math.round((sp * 100) / 2)}%)` : ""}`;
}

/** The whole report as Markdown. */
export function markdown(
  series: readonly Series[],
  reps: number,
  requested: readonly ScenarioName[],
): string {
  const ts = targets(series, requested);
  const target = (prefix: string) => ts.find((t) => t.name.startsWith(prefix));
  const out: string[] = [];
  const clientScenarios = SCENARIOS.filter((s) => !s.startsWith("hit-"));

  const nodeRows = clientScenarios
    .filter((s) => series.some((x) => x.runtime === "node" && x.scenario === s))
    .map((s) => {
      const ours = opsOf(series, "node", s, "ours");
      const t = target(`${DESCRIPTIONS[s]}: ours / node-redis`);
      return [
        DESCRIPTIONS[s],
        cell(series, "node", s, "ours"),
        cell(series, "node", s, "node-redis"),
        cell(series, "node", s, "ioredis"),
        fmtRatio(ratio(ours, opsOf(series, "node", s, "node-redis"))),
        fmtRatio(ratio(ours, opsOf(series, "node", s, "ioredis"))),
        t?.want ?? "",
        verdict(t),
      ];
    });
  if (nodeRows.length > 0) {
    out.push(
      `Node, ops/s (median of ${reps}; ± is half the spread when it reaches 10%)`,
      "",
    );
    out.push(
      table([
        "scenario",
        "herdless",
        "node-redis",
        "ioredis",
        "vs node-redis",
        "vs ioredis",
        "target",
        "",
      ], nodeRows),
      "",
    );
  }

  const bunRows = clientScenarios
    .filter((s) => series.some((x) => x.runtime === "bun" && x.scenario === s))
    .map((s) => {
      const t = target(`Bun, ${DESCRIPTIONS[s]}`);
      return [
        DESCRIPTIONS[s],
        cell(series, "bun", s, "ours"),
        cell(series, "bun", s, "bun"),
        fmtRatio(t?.ratio),
        t?.want ?? "",
        verdict(t),
      ];
    });
  if (bunRows.length > 0) {
    out.push(`Bun, ops/s (median of ${reps})`, "");
    out.push(
      table(
        ["scenario", "herdless", "Bun RedisClient", "ratio", "target", ""],
        bunRows,
      ),
      "",
    );
  }

  const hitRows = (["hit-seq", "hit-100"] as const)
    .filter((s) => requested.includes(s))
    .map((s) => {
      const t = target(DESCRIPTIONS[s]);
      const rss = (client: string) => {
        const x = find(series, "node", s, client);
        return fmtMiB(
          x && x.peakRssBytes.length > 0 ? median(x.peakRssBytes) : undefined,
        );
      };
      return [
        DESCRIPTIONS[s],
        cell(series, "node", s, "raw-get"),
        cell(series, "node", s, "pipeline"),
        fmtRatio(t?.ratio),
        t?.want ?? "",
        verdict(t),
        rss("raw-get"),
        rss("pipeline"),
      ];
    });
  if (hitRows.length > 0) {
    out.push(
      `Cache hit on Node, herdless client, ops/s (median of ${reps})`,
      "",
    );
    out.push(
      table(
        [
          "scenario",
          "raw GET",
          "full pipeline",
          "ratio",
          "target",
          "",
          "peak RSS raw GET",
          "peak RSS pipeline",
        ],
        hitRows,
      ),
      "",
    );
  }

  const rssRows = clientScenarios
    .filter((s) => series.some((x) => x.scenario === s))
    .map((s) => {
      const m = (runtime: string, client: string) => {
        const x = find(series, runtime, s, client);
        return x && x.peakRssBytes.length > 0 ? median(x.peakRssBytes) : undefined;
      };
      return [
        DESCRIPTIONS[s],
        fmtMiB(m("node", "ours")),
        fmtMiB(m("node", "node-redis")),
        fmtMiB(m("node", "ioredis")),
        fmtRatio(ratio(m("node", "ours"), m("node", "node-redis"))),
        fmtMiB(m("bun", "ours")),
        fmtMiB(m("bun", "bun")),
      ];
    });
  if (rssRows.length > 0) {
    const t = target("peak RSS");
    rssRows.push([
      "**worst scenario**",
      fmtMiB(peakRss(series, "node", "ours")),
      fmtMiB(peakRss(series, "node", "node-redis")),
      fmtMiB(peakRss(series, "node", "ioredis")),
      `${fmtRatio(t?.ratio)} (target ${t?.want ?? "-"}: ${verdict(t)})`,
      fmtMiB(peakRss(series, "bun", "ours")),
      fmtMiB(peakRss(series, "bun", "bun")),
    ]);
    out.push("Peak RSS of each client's own process (VmHWM, median)", "");
    out.push(
      table(
        [
          "scenario",
          "herdless",
          "node-redis",
          "ioredis",
          "vs node-redis",
          "herdless on Bun",
          "Bun RedisClient",
        ],
        rssRows,
      ),
      "",
    );
  }

  const cpuRows = series
    .filter((s) => s.opsPerSec.length > 0)
    .map((s) => {
      const ops = median(s.opsPerSec);
      const busy = (xs: number[]) => (xs.length === 0 ? undefined : median(xs));
      const c = busy(s.clientBusy);
      const v = busy(s.serverBusy);
      const pct = (
        x: number | undefined,
      ) => (x === undefined ? "-" : `${Math.round(x * 100)}%`);
      const us = (
        x: number | undefined,
      ) => (x === undefined ? "-" : ((x * 1e6) / ops).toFixed(2));
      return [
        `${s.runtime} ${s.scenario}`,
        s.client,
        fmtOps(ops),
        pct(c),
        us(c),
        pct(v),
        us(v),
      ];
    });
  if (cpuRows.length > 0) {
    out.push(
      "Where the time goes: CPU busy share of each side's core, and CPU µs per operation (medians)",
      "",
    );
    out.push(
      table([
        "scenario",
        "client",
        "ops/s",
        "client busy",
        "client µs/op",
        "server busy",
        "server µs/op",
      ], cpuRows),
      "",
    );
  }

  if (ts.length === 0) return out.join("\n");
  out.push("Targets (client)", "");
  out.push(
    table(
      ["target", "medians", "best repetitions", "want", "verdict (medians)"],
      ts.map((
        t,
      ) => [
        t.name,
        fmtRatio(t.ratio),
        fmtRatio(t.best),
        t.want,
        t.note ?? verdict(t),
      ]),
    ),
    "",
  );
  const met = ts.filter((t) => t.met === true).length;
  out.push(`${met} of ${ts.length} targets met.`);

  const errors = series.flatMap((s) => s.errors.map((e) => `- ${s.runtime} ${s.scenario} ${s.client}: ${e}`));
  if (errors.length > 0) out.push("", "Errors:", ...[...new Set(errors)]);
  return out.join("\n");
}
