/**
 * One scenario as text: a heading, its setup, the origin's label and a table
 * with a row per strategy set. The table is Markdown with padded columns, so
 * the same output reads well in a terminal and renders on GitHub.
 *
 * @module
 */
import { recipeReadings } from "./recipe_readings.ts";
import { reading } from "./readings.ts";
import type { RowResult, ScenarioResult } from "../types.ts";
import { count, ms } from "../../shared/format.ts";

const COLUMNS: { title: string; cell: (r: RowResult) => string }[] = [
  { title: "strategies", cell: (r) => r.set },
  { title: "requests", cell: (r) => count(r.requests) },
  { title: "origin calls", cell: (r) => count(r.originCalls) },
  { title: "peak in flight", cell: (r) => count(r.peakConcurrent) },
  { title: "p50 ms", cell: (r) => ms(r.latency.p50) },
  { title: "p99 ms", cell: (r) => ms(r.latency.p99) },
  { title: "max ms", cell: (r) => ms(r.latency.max) },
  { title: "stale", cell: (r) => count(r.stale) },
  { title: "errors", cell: (r) => count(r.errors) },
  { title: "timeouts", cell: (r) => count(r.timeouts) },
];

// The recipes' tables: what the comparison with the articles needs (polling shows in commands per request).
const RECIPE_COLUMNS: { title: string; cell: (r: RowResult) => string }[] = [
  { title: "row", cell: (r) => r.set },
  { title: "requests", cell: (r) => count(r.requests) },
  { title: "origin calls", cell: (r) => count(r.originCalls) },
  { title: "peak in flight", cell: (r) => count(r.peakConcurrent) },
  { title: "Redis cmds/request", cell: (r) => (r.requests === 0 ? "-" : ((r.commands ?? 0) / r.requests).toFixed(1)) },
  { title: "p99 ms", cell: (r) => ms(r.latency.p99) },
  { title: "stale served", cell: (r) => count(r.pastTtl ?? r.stale) },
  { title: "older than served", cell: (r) => count(r.older ?? 0) },
  { title: "errors", cell: (r) => count(r.errors) },
  { title: "timeouts", cell: (r) => count(r.timeouts) },
];

// The near-cache scenario's table: the common counts, then what a near tier buys and costs.
const COHERENCE_COLUMNS: { title: string; cell: (r: RowResult) => string }[] = [
  { title: "strategies", cell: (r) => r.set },
  { title: "reads", cell: (r) => count(r.requests) },
  { title: "near hits", cell: (r) => `${((r.coherence?.nearHitRatio ?? 0) * 100).toFixed(1)}%` },
  { title: "writes", cell: (r) => count(r.coherence?.writes ?? 0) },
  { title: "stale reads", cell: (r) => count(r.coherence?.staleReads ?? 0) },
  { title: "origin calls", cell: (r) => count(r.originCalls) },
  { title: "lag p50 ms", cell: (r) => fine(r.coherence?.lag.p50 ?? 0) },
  { title: "lag p99 ms", cell: (r) => fine(r.coherence?.lag.p99 ?? 0) },
  { title: "lag max ms", cell: (r) => fine(r.coherence?.lag.max ?? 0) },
  { title: "read p50 ms", cell: (r) => fine(r.latency.p50) },
  { title: "read p99 ms", cell: (r) => fine(r.latency.p99) },
  { title: "errors", cell: (r) => count(r.errors + r.timeouts) },
];

// Above this event-loop delay the lab measures its own starvation, not the cache.
const STARVED_MS = 100;

// Sub-millisecond figures (a near hit, a loopback lag) need two decimals to differ at all.
function fine(n: number): string {
  return n < 1 ? n.toFixed(2) : ms(n);
}

// One cell of the recipes' summary: the row's counts in one line, the failures only when there are any.
function summaryCell(r: RowResult): string {
  const cmds = r.requests === 0 ? "0" : ((r.commands ?? 0) / r.requests).toFixed(1);
  const calls = `${count(r.originCalls)} call${r.originCalls === 1 ? "" : "s"}`;
  const parts = [r.peakConcurrent > 1 ? `${calls} (${count(r.peakConcurrent)} at once)` : calls];
  parts.push(`${cmds} cmd/req`, `p99 ${ms(r.latency.p99)}`);
  const stale = r.pastTtl ?? r.stale;
  if (stale > 0) parts.push(`${count(stale)} stale`);
  if ((r.older ?? 0) > 0) parts.push(`**${count(r.older!)} older**`);
  if (r.errors + r.timeouts > 0) parts.push(`**${count(r.errors + r.timeouts)} failed**`);
  return parts.join(", ");
}

/** A scenario of stories in one table: a line per story, a column per row (lab/README.md shows it). */
export function summaryTable(parts: readonly ScenarioResult[]): string {
  const labels = parts[0]?.rows.map((r) => r.set) ?? [];
  const titles = ["story", ...labels];
  const cells = parts.map((p) =>
    [p.title, ...labels.map((l) => p.rows.find((r) => r.set === l))].map((c) =>
      typeof c === "string" ? c : c === undefined ? "-" : summaryCell(c)
    )
  );
  const widths = titles.map((t, i) => Math.max(t.length, ...cells.map((row) => row[i]!.length)));
  const line = (texts: string[]) => `| ${texts.map((t, i) => t.padEnd(widths[i]!)).join(" | ")} |`;
  const rule = `|${widths.map((w) => `:${"-".repeat(w + 1)}`).join("|")}|`;
  return [line(titles), rule, ...cells.map(line)].join("\n");
}

/** The scenario's section: heading, setup, origin label, table, and what needs a word (drops, error kinds). */
export function formatScenario(index: number | string, s: ScenarioResult, part = false): string {
  if (s.parts !== undefined) {
    // Stories with a table of their own (the Redis-down ones, with rows of their own) are left to it.
    const summed = s.parts.filter((p) => p.table === undefined);
    const own = s.parts.length - summed.length;
    return [
      `### ${index}. ${s.title}`,
      "",
      `${s.setup}.`,
      "",
      "Per story and row: origin calls (and the most at once, when above 1), Redis commands per request, p99 ms; " +
      "then, when not zero, responses served " +
      "past their TTL (stale), responses older than a value already served (older), errors and timeouts (failed)" +
      (own === 0 ? "." : `; the last ${own} stories, with rows of their own, have only their own tables below.`),
      "",
      summaryTable(summed),
      ...s.parts.map((p, i) => `\n${formatScenario(`${index}.${i + 1}`, p, true)}`),
    ]
      .join("\n");
  }
  const columns = part
    ? RECIPE_COLUMNS
    : s.rows.length > 0 && s.rows.every((r) => r.coherence !== undefined)
    ? COHERENCE_COLUMNS
    : COLUMNS;
  // A scenario with its own columns (the XFetch comparison) brings its cells.
  const titles = s.table?.columns ?? columns.map((c) => c.title);
  const cells = s.table?.cells ?? s.rows.map((r) => columns.map((c) => c.cell(r)));
  const widths = titles.map((t, i) => Math.max(t.length, ...cells.map((row) => row[i]!.length)));
  // The first column is text (left-aligned), the others are numbers (right-aligned).
  const pad = (text: string, i: number) => (i === 0 ? text.padEnd(widths[i]!) : text.padStart(widths[i]!));
  const line = (texts: string[]) => `| ${texts.map(pad).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? `:${"-".repeat(w + 1)}` : `${"-".repeat(w + 1)}:`)).join("|")}|`;
  const out = [
    `${part ? "####" : "###"} ${index}. ${s.title}`,
    "",
    `${s.setup}. ${s.origin}.`,
    "",
    line(titles),
    rule,
    ...cells.map(line),
  ];
  // Every table says which column its strategies improve, and why another one may not.
  const what = s.reading ?? (part ? recipeReadings(s.id, s.rows) : reading(s.id, s.rows));
  if (what !== undefined) out.push("", what);
  const notes: string[] = [];
  if (s.loopDelay !== undefined) {
    notes.push(
      `event-loop delay of the lab process during the run: p99 ${ms(s.loopDelay.p99)} ms, max ${
        ms(s.loopDelay.max)
      } ms (latency below that is the machine, not the cache)`,
    );
    if (s.loopDelay.p99 > STARVED_MS) {
      notes.push(
        `WARNING: the lab process was starved (event-loop p99 above ${STARVED_MS} ms): this scenario's latencies, timeouts and the unprotected rows' counts measure the machine; run it again on a quieter one`,
      );
    }
  }
  for (const r of s.rows) {
    if (r.dropped > 0) {
      notes.push(`${r.set}: ${count(r.dropped)} requests dropped by the generator (too many outstanding)`);
    }
    if (r.coherence !== undefined) {
      const d = r.coherence.readerLoopDelay;
      notes.push(
        `${r.set}: event-loop delay of the reader processes: p99 ${ms(d.p99)} ms, max ${
          ms(d.max)
        } ms (a push waits that long to be read: stale windows and lags above it are the machine)`,
      );
    }
    if ((r.coherence?.unseen ?? 0) > 0) {
      notes.push(
        `${r.set}: ${
          count(r.coherence!.unseen)
        } of the writes x readers were never read by that reader (rewritten first, or the run ended): no lag for them`,
      );
    }
    if (r.originErrors > 0) notes.push(`${r.set}: ${count(r.originErrors)} origin calls failed`);
    for (const e of r.errorSamples) notes.push(`${r.set}: ${e.length > 160 ? `${e.slice(0, 157)}...` : e}`);
  }
  if (notes.length > 0) out.push("", ...notes.map((n) => `- ${n}`));
  return out.join("\n");
}
