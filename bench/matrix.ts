/**
 * A second method for the client table: the scenarios again, varying one at
 * a time what the main table fixes (64-byte values, 100 in flight, 1,000
 * keys): values of 16 B, 100 B and 4 KiB, 50 and 500 in flight, and keys
 * spread over 1,000 or 100,000. herdless against node-redis on Node and
 * against Bun's `RedisClient` on Bun, each in its own process as in the main
 * table. `npm run bench -- --only matrix` (not part of the default run).
 *
 * @module
 */
import type { RedisClient } from "../resp/mod.ts";
import { fmtRatio, table } from "./markdown.ts";
import { median, type Series } from "./report.ts";
import { type ScenarioName, type Shape, shapeKeys } from "./scenarios.ts";

/** One row of the matrix: a client scenario with one factor changed from {@linkcode BASE}. */
export interface MatrixCell {
  id: string;
  scenario: Extract<ScenarioName, "get-100" | "set-batch" | "script-100">;
  shape: Shape;
  /** What changed from the base, for the table. */
  label: string;
  /** The target for this scenario against node-redis (Bun's: 1.0x). */
  want: number;
}

/** The shape every row starts from: 100-byte values, 100 in flight, 1,000 keys. */
export const BASE: Shape = { valueSize: 100, inFlight: 100, keys: 1_000 };

const NAMES = {
  "get-100": "GET",
  "set-batch": "SET, batches of 1,000",
  "script-100": "EVALSHA",
} as const;
const WANT = { "get-100": 2.0, "set-batch": 1.5, "script-100": 1.5 } as const;

function cells(): MatrixCell[] {
  const out: MatrixCell[] = [];
  const add = (
    scenario: MatrixCell["scenario"],
    change: Partial<Shape>,
    label: string,
  ) => {
    const shape = { ...BASE, ...change };
    out.push({
      id: `m-${scenario}-${shape.valueSize}-${shape.inFlight}-${shape.keys}`,
      scenario,
      shape,
      label: `${NAMES[scenario]}: ${label}`,
      want: WANT[scenario],
    });
  };
  for (const scenario of ["get-100", "script-100"] as const) {
    add(scenario, {}, "100 B, 100 in flight, 1,000 keys");
    add(scenario, { valueSize: 16 }, "16 B values");
    add(scenario, { valueSize: 4096 }, "4 KiB values");
    add(scenario, { inFlight: 50 }, "50 in flight");
    add(scenario, { inFlight: 500 }, "500 in flight");
    add(scenario, { keys: 100_000 }, "100,000 keys");
  }
  // A batch is its own "in flight": 1,000 commands, awaited together.
  add("set-batch", {}, "100 B, 1,000 keys");
  add("set-batch", { valueSize: 16 }, "16 B values");
  add("set-batch", { valueSize: 4096 }, "4 KiB values");
  add("set-batch", { keys: 100_000 }, "100,000 keys");
  return out;
}

/** Every row, in the order they are run and printed. */
export const MATRIX: readonly MatrixCell[] = cells();

/** Write the keys the GET and EVALSHA rows read, each shape's values at its size. */
export async function seedMatrix(redis: RedisClient): Promise<void> {
  const seen = new Set<string>();
  for (const cell of MATRIX) {
    if (cell.scenario === "set-batch") continue;
    const { valueSize, keys } = cell.shape;
    if (seen.has(`${valueSize}:${keys}`)) continue;
    seen.add(`${valueSize}:${keys}`);
    const value = "v".repeat(valueSize);
    const all = shapeKeys(cell.shape);
    for (let i = 0; i < all.length; i += 10_000) {
      await Promise.all(
        all.slice(i, i + 10_000).map((k) => redis.send(["SET", k, value])),
      );
    }
  }
}

const fmtOps = (n: number | undefined) =>
  n === undefined || !Number.isFinite(n) ? "-" : `${Math.round(n / 1000).toLocaleString("en-US")}k`;

/** The matrix as Markdown: ops/s medians, ratios against the peer and its target, peak RSS ratio. */
export function matrixMarkdown(
  series: readonly Series[],
  reps: number,
): string {
  const get = (
    runtime: string,
    id: string,
    client: string,
    pick: (s: Series) => number[],
  ) => {
    const s = series.find((x) => x.runtime === runtime && x.scenario === id && x.client === client);
    return s === undefined || pick(s).length === 0 ? undefined : median(pick(s));
  };
  const ops = (s: Series) => s.opsPerSec;
  const rss = (s: Series) => s.peakRssBytes;
  const div = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined || b === 0 ? undefined : a / b;
  const mark = (
    r: number | undefined,
    ok: (r: number) => boolean,
  ) => (r === undefined ? "" : ok(r) ? "MET" : "NOT MET");
  const rows = MATRIX.filter((c) => series.some((s) => s.scenario === c.id))
    .map((c) => {
      const node = div(
        get("node", c.id, "ours", ops),
        get("node", c.id, "node-redis", ops),
      );
      const bun = div(
        get("bun", c.id, "ours", ops),
        get("bun", c.id, "bun", ops),
      );
      const memory = div(
        get("node", c.id, "ours", rss),
        get("node", c.id, "node-redis", rss),
      );
      return [
        c.label,
        fmtOps(get("node", c.id, "ours", ops)),
        fmtOps(get("node", c.id, "node-redis", ops)),
        `${fmtRatio(node)} ${mark(node, (r) => r >= c.want)} (>= ${c.want.toFixed(1)}x)`,
        fmtOps(get("bun", c.id, "ours", ops)),
        fmtOps(get("bun", c.id, "bun", ops)),
        `${fmtRatio(bun)} ${mark(bun, (r) => r >= 1)}`,
        `${fmtRatio(memory)} ${mark(memory, (r) => r <= 0.6)}`,
      ];
    });
  if (rows.length === 0) return "";
  const head = [
    "second method (one change from 100 B, 100 in flight, 1,000 keys)",
    "herdless",
    "node-redis",
    "vs node-redis (target)",
    "herdless on Bun",
    "Bun RedisClient",
    "vs Bun (>= 1.0x)",
    "peak RSS vs node-redis (<= 0.6x)",
  ];
  return [`One factor at a time, ops/s (median of ${reps})`, "", table(head, rows)].join("\n");
}
