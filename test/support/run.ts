/**
 * The test runner for Node (under tsx and c8), Bun and Deno alike: finds the
 * `*.test.ts` files under `test/` and runs their uvu suites file by file, in
 * two worker processes (`HERDLESS_TEST_WORKERS`; 1 runs every file in this
 * process, as does a run of one file), the slowest of the last run first,
 * then reports the totals and the slowest files and suites. Optional arguments are substrings a file's path
 * must contain (`run.ts resp/decode lease`).
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import process from "node:process";
import { seed } from "./random.ts";
import { type FileResult, runFile } from "./run_file.ts";
import { report } from "./run_report.ts";
import { runInWorkers, serveFiles, stopWorkers } from "./run_workers.ts";

const here = import.meta.dirname ?? new URL(".", import.meta.url).pathname;
const root = resolve(here, "..");

function walk(dir: string, out: string[]): string[] {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (name === "support" || name === "node_modules") continue;
    if (statSync(path).isDirectory()) walk(path, out);
    else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

/**
 * Once every file is done, anything still open (a leaked socket, a timer)
 * must not keep CI waiting: name what is open, where the runtime tells, and
 * exit 2 s later with the run's code.
 */
function exitWhenIdle(code: number): void {
  process.exitCode = code;
  setTimeout(() => {
    const info = (process as { getActiveResourcesInfo?: () => string[] }).getActiveResourcesInfo?.();
    const kinds = info === undefined ? "" : ` (${info.join(", ")})`;
    console.error(`warning: open handles kept the test process alive 2 s after the last suite${kinds}`);
    process.exit(code);
  }, 2000).unref?.();
}

// Each file's time in the last run that ran it, so the next run can start the
// slowest first: a long file started last would leave the other worker idle.
const TIMES = join(root, "..", "node_modules", ".cache", "herdless", "test-times.json");

function lastTimes(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(TIMES, "utf8")) as Record<string, number>;
  } catch {
    return {};
  }
}

/** `files` with those never timed first (in path order), then the others slowest first. */
function slowestFirst(files: readonly string[]): string[] {
  const times = lastTimes();
  return [...files].sort((a, b) => (times[b] ?? Infinity) - (times[a] ?? Infinity) || (a < b ? -1 : 1));
}

function remember(results: readonly FileResult[]): void {
  const times = lastTimes();
  for (const r of results) if (!r.failed) times[r.file] = Math.round(r.ms);
  try {
    mkdirSync(dirname(TIMES), { recursive: true });
    writeFileSync(TIMES, `${JSON.stringify(times, null, 1)}\n`);
  } catch {
    // Only an ordering hint: a read-only checkout runs in path order.
  }
}

if (process.argv.includes("--worker")) {
  // A worker of a parent run: files come on stdin, one a line.
  // Its files' failures are in their results: a non-zero exit tells the parent the worker itself broke.
  await serveFiles((file) => runFile(root, join(root, file)));
  exitWhenIdle(0);
} else {
  const filters = process.argv.slice(2).filter((a) => !a.startsWith("-")).map((a) => a.replace(/^test\//, ""));
  const files = walk(root, []).map((f) => f.slice(root.length + 1))
    .filter((f) => filters.length === 0 || filters.some((p) => f.includes(p)));
  if (files.length === 0) {
    console.error(`no test files match ${JSON.stringify(filters)}`);
    process.exit(1);
  }
  const asked = Number(process.env.HERDLESS_TEST_WORKERS ?? 2);
  if (!Number.isInteger(asked) || asked < 1) {
    throw new RangeError(`HERDLESS_TEST_WORKERS must be a positive integer, got ${process.env.HERDLESS_TEST_WORKERS}`);
  }
  const workers = Math.min(asked, files.length);
  // uvu has no per-test timeout: a test that hangs must fail the run, not stall CI.
  // The suite takes about 6 min on two idle cores; a busy machine doubles
  // that, and .ci/run must end within 25 min with the installs before it.
  const limitMs = Number(process.env.HERDLESS_TEST_LIMIT_MS ?? 20 * 60_000);
  const watchdog = setTimeout(() => {
    const stuck = workers > 1 ? stopWorkers() : [];
    console.error(`\ntest run exceeded ${limitMs} ms: a test hangs${stuck.length ? ` (in ${stuck.join(", ")})` : ""}`);
    process.exit(1);
  }, limitMs);
  watchdog.unref?.();
  const started = performance.now();
  let results: FileResult[] = [];
  if (workers > 1) {
    // A file whose own timings a second file running beside it could break says so
    // ("// Runs alone: <why>" at the start of a line): it runs last, while nothing else does.
    const alone = new Set(files.filter((f) => /^\/\/ Runs alone: /m.test(readFileSync(join(root, f), "utf8"))));
    const ordered = slowestFirst(files);
    const queue = [...ordered.filter((f) => !alone.has(f)), ...ordered.filter((f) => alone.has(f))];
    results = await runInWorkers(join(here, "run.ts"), queue, workers, alone);
  } else {
    for (const file of files) results.push(await runFile(root, join(root, file)));
  }
  clearTimeout(watchdog);
  report(results, performance.now() - started, workers);
  remember(results);
  const failed = results.some((r) => r.failed);
  // Random draws (fast-check's included) all come from one seed: print it so
  // a failure found by a random case can be replayed.
  if (failed) console.error(`\nrandom draws of this run: HERDLESS_SEED=${seed} replays them`);
  exitWhenIdle(failed ? 1 : 0);
}
