/**
 * Runs one test file's uvu suites in this process and times them: imports the
 * file (its suites queue themselves, uvu being told to defer), then runs each
 * queued suite as uvu's own `exec` would, printing the same lines.
 */
import { relative } from "node:path";
import { pathToFileURL } from "node:url";
import process from "node:process";

/** What one file's run came to; the runner's report is built from these. */
export interface FileResult {
  /** The path under `test/`. */
  readonly file: string;
  readonly total: number;
  readonly passed: number;
  readonly skipped: number;
  /** A test failed, or the file itself could not be loaded or run. */
  readonly failed: boolean;
  readonly ms: number;
  /** Each suite's wall time, its before and after hooks included. */
  readonly suites: readonly { readonly name: string; readonly ms: number }[];
}

type Suite = () => Promise<[true | string, number, number, number]>;
const g = globalThis as unknown as { UVU_DEFER: number; UVU_INDEX: number; UVU_QUEUE: unknown[][] };
g.UVU_DEFER = 1;
// Loaded after UVU_DEFER is set, so suites queue instead of running on import.
await import("uvu");

// uvu colours a suite's name unless NO_COLOR is set: its escape codes are not part of the name.
// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;

/** Import `path` (absolute), run its suites, print uvu's lines for them, and report. */
export async function runFile(root: string, path: string): Promise<FileResult> {
  const file = relative(root, path);
  const started = performance.now();
  g.UVU_QUEUE = [[]];
  g.UVU_INDEX = 0;
  process.stdout.write(`${file}\n`);
  let total = 0, passed = 0, skipped = 0, failed = false;
  const suites: { name: string; ms: number }[] = [];
  try {
    await import(pathToFileURL(path).href);
  } catch (error) {
    process.stdout.write(`\n  FAIL  ${file} could not be loaded: ${(error as Error)?.stack ?? error}\n\n`);
    return { file, total: 1, passed: 0, skipped: 0, failed: true, ms: performance.now() - started, suites };
  }
  for (const suite of g.UVU_QUEUE[0] as Suite[]) {
    // uvu writes a suite's name first: keep it to name the suite in the timings.
    let name: string | undefined;
    const write = process.stdout.write;
    process.stdout.write = function (chunk: unknown, ...rest: unknown[]) {
      name ??= String(chunk).replace(ANSI, "").trim();
      return (write as (...a: unknown[]) => boolean).call(process.stdout, chunk, ...rest);
    } as typeof process.stdout.write;
    const suiteStarted = performance.now();
    let outcome: Awaited<ReturnType<Suite>>;
    try {
      outcome = await suite();
    } finally {
      process.stdout.write = write;
    }
    suites.push({ name: name ?? "(unnamed)", ms: performance.now() - suiteStarted });
    const [errors, ran, skips, max] = outcome;
    total += max;
    passed += ran;
    skipped += skips;
    if (errors !== true) {
      failed = true;
      process.stdout.write(`\n${errors}\n`);
    }
  }
  process.stdout.write("\n");
  return { file, total, passed, skipped, failed, ms: performance.now() - started, suites };
}
