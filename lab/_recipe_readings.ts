/**
 * The sentences under each of the recipes' tables: per recipe, where it
 * fails in this story and why herdless does not, with the run's own numbers.
 *
 * @module
 */
import type { RowResult } from "./_types.ts";

type Line = (r: RowResult, herdless: RowResult) => string;

const n = (x: number) => x.toLocaleString("en-US");

/** One sentence per recipe per story; `undefined` when a story has none. */
const LINES: Record<string, Partial<Record<string, Line>>> = {};

/** The readings under story `id`'s table, one bullet per recipe. */
export function recipeReadings(id: string, rows: readonly RowResult[]): string | undefined {
  const herdless = rows[0];
  if (herdless === undefined) return undefined;
  const lines = rows.slice(1).flatMap((r) => {
    const line = LINES[id]?.[r.set];
    return line === undefined ? [] : [`- ${r.set}: ${line(r, herdless)}`];
  });
  return lines.length === 0
    ? undefined
    : lines.join("\n") + `\n(${n(herdless.originCalls)} origin calls for herdless.)`;
}
