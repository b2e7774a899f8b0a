/**
 * The Markdown the reports print: a table with its first column left and the
 * figures right-aligned, and the cells every table formats the same way.
 *
 * @module
 */

/** A Markdown table: `head`, then one line per row; the first column left-aligned, the others right. */
export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const lines = [
    `| ${head.join(" | ")} |`,
    `|${head.map((_, i) => (i === 0 ? " --- " : " ---: ")).join("|")}|`,
  ];
  for (const row of rows) lines.push(`| ${row.join(" | ")} |`);
  return lines.join("\n");
}

/** A ratio as `1.23x`, or `-` when a side is missing. */
export const fmtRatio = (
  r: number | undefined,
) => (r === undefined || !Number.isFinite(r) ? "-" : `${r.toFixed(2)}x`);

/** Bytes as MiB with one decimal, or `-`. */
export const fmtMiB = (
  b: number | undefined,
) => (b === undefined ? "-" : `${(b / 1048576).toFixed(1)} MiB`);

/** A row saying why a figure is missing: `label`, the reason, then `-` in each of the `figures` other cells. */
export function unavailableRow(label: string, why: string, figures: number): string[] {
  return [label, `not available: ${why}`, ...Array<string>(figures).fill("-")];
}
