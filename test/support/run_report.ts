/**
 * The end of a test run: uvu's totals, the slowest ten files and suites (so
 * the time a run takes can be traced to where it goes), and a plain
 * "N passed, N failed" line.
 */
import { writeFileSync } from "node:fs";
import process from "node:process";
import type { FileResult } from "./run_file.ts";

const seconds = (ms: number) => `${(ms / 1000).toFixed(1).padStart(6)} s`;

/**
 * Print the report of `results`, a run that took `ms` of wall time with
 * `workers` processes; with `HERDLESS_TEST_TIMINGS` set, also write every
 * file's and suite's time there as JSON, to compare two runs.
 */
export function report(results: readonly FileResult[], ms: number, workers: number): void {
  const timings = process.env.HERDLESS_TEST_TIMINGS;
  if (timings) writeFileSync(timings, `${JSON.stringify({ ms, workers, results }, null, 1)}\n`);
  const out = (line = "") => process.stdout.write(`${line}\n`);
  const total = results.reduce((n, r) => n + r.total, 0);
  const passed = results.reduce((n, r) => n + r.passed, 0);
  const skipped = results.reduce((n, r) => n + r.skipped, 0);
  const files = [...results].sort((a, b) => b.ms - a.ms).slice(0, 10);
  const suites = results.flatMap((r) => r.suites.map((s) => ({ ...s, file: r.file })))
    .sort((a, b) => b.ms - a.ms).slice(0, 10);
  const busy = results.reduce((n, r) => n + r.ms, 0);
  out(`Slowest files (of ${results.length}; ${seconds(busy).trim()} in files, ${workers} worker(s)):`);
  for (const r of files) out(`  ${seconds(r.ms)}  ${r.file}`);
  out("Slowest suites:");
  for (const s of suites) out(`  ${seconds(s.ms)}  ${s.file} > ${s.name}`);
  const failedFiles = results.filter((r) => r.failed).map((r) => r.file);
  if (failedFiles.length > 0) out(`\nFailed in: ${failedFiles.join(", ")}`);
  out(`\n  Total:     ${total}`);
  out(`  Passed:    ${passed}`);
  out(`  Skipped:   ${skipped}`);
  out(`  Duration:  ${(ms / 1000).toFixed(1)} s\n`);
  out(`${passed} passed, ${total - passed} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`);
}
