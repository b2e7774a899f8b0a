/**
 * The results as a Markdown table with padded columns (reads in a terminal,
 * renders on GitHub): one row per phase, then a legend of notes.
 *
 * @module
 */
import type { PhaseCalls } from "./calls.ts";
import type { PhaseSummary } from "./metrics.ts";
import type { Connections } from "./probe.ts";
import { count as n, ms } from "../shared/format.ts";

/** One phase of the run, measured. */
export interface Row {
  name: string;
  /** False for warm-up and baseline: no recovery to measure. */
  fault: boolean;
  summary: PhaseSummary;
  /** Origin calls, and those beyond one per key per TTL window. */
  origin: PhaseCalls;
  before: Connections;
  after: Connections;
}

const mb = (bytes: number) => n(Math.round(bytes / 1024 / 1024));

const COLUMNS: { title: string; cell: (r: Row) => string }[] = [
  { title: "phase", cell: (r) => r.name },
  { title: "gets", cell: (r) => n(r.summary.gets) },
  {
    title: "errors by class",
    cell: (r) =>
      Object.entries(r.summary.errors).sort((a, b) => b[1] - a[1]).map(([k, c]) => `${k} ${n(c)}`).join(", ") ||
      "0",
  },
  { title: "p50 ms", cell: (r) => ms(r.summary.p50) },
  { title: "p99 ms", cell: (r) => ms(r.summary.p99) },
  { title: "max ms", cell: (r) => ms(r.summary.max) },
  { title: "origin/s", cell: (r) => n(Math.round(r.origin.faultRate)) },
  { title: "excess", cell: (r) => n(r.origin.excess) },
  { title: "shed", cell: (r) => n(r.summary.shed) },
  { title: "late pub.", cell: (r) => n(r.summary.late) },
  { title: "hangs", cell: (r) => n(r.summary.hangs) },
  {
    title: "backwards",
    cell: (r) => `${n(r.summary.backwards)}${r.summary.lost > 0 ? ` (+${n(r.summary.lost)} lost)` : ""}`,
  },
  {
    title: "recover ms",
    cell: (r) => (!r.fault ? "-" : r.summary.recoverMs === undefined ? "NEVER" : n(r.summary.recoverMs)),
  },
  {
    title: "RSS MB",
    cell: (r) => `${r.summary.rssBefore === 0 ? "-" : mb(r.summary.rssBefore)}→${mb(r.summary.rssAfter)}`,
  },
  {
    title: "conns (server)",
    cell: (r) => `${r.before.workers}→${r.after.workers} (${r.before.server}→${r.after.server})`,
  },
];

/** The table without the columns titled in `omit`, then one line per note. */
export function formatTable(rows: Row[], notes: string[], omit: readonly string[] = []): string {
  const columns = COLUMNS.filter((c) => !omit.includes(c.title));
  const cells = rows.map((r) => columns.map((c) => c.cell(r)));
  const widths = columns.map((c, i) => Math.max(c.title.length, ...cells.map((row) => row[i]!.length)));
  const left = (i: number) => columns[i]!.title === "phase" || columns[i]!.title === "errors by class";
  const pad = (text: string, i: number) => (left(i) ? text.padEnd(widths[i]!) : text.padStart(widths[i]!));
  const line = (texts: string[]) => `| ${texts.map(pad).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (left(i) ? `:${"-".repeat(w + 1)}` : `${"-".repeat(w + 1)}:`)).join("|")}|`;
  const out = [line(columns.map((c) => c.title)), rule, ...cells.map(line)];
  if (notes.length > 0) out.push("", ...notes.map((note) => `- ${note}`));
  return out.join("\n");
}
