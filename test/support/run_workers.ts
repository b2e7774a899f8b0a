/**
 * Runs test files in worker processes, each a copy of the runner under the
 * same runtime (Node through tsx and c8's NODE_V8_COVERAGE, Bun, Deno), fed
 * one file at a time as it frees up. A file's output is held until the file
 * is done and then printed whole, so files never interleave.
 *
 * Worker k of n is told so (HERDLESS_TEST_WORKER, HERDLESS_TEST_WORKERS):
 * freePort() then hands it only ports p with p % n === k, so two workers can
 * never start servers on one port (a cluster's bus port, p + 10000, keeps p's
 * remainder too). Every worker draws from the parent's seed.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import process from "node:process";
import type { FileResult } from "./run_file.ts";
import { workerCommand } from "./processes.ts";
import { seed } from "./random.ts";

/** The line a worker prints after each file, followed by that file's result as JSON. */
export const DONE = "\u0000herdless-file-done ";

const running = new Map<number, { child: ChildProcess; file: string | undefined }>();

/**
 * Run `files` (paths under `root`) in `count` worker processes started from
 * `runner` (the runner's own path, given `--worker`); resolves every file's
 * result. A file in `alone` runs while no other file does. A worker that dies
 * fails the file it was running and is replaced.
 */
export function runInWorkers(
  runner: string,
  files: readonly string[],
  count: number,
  alone: ReadonlySet<string> = new Set(),
): Promise<FileResult[]> {
  const queue = [...files];
  const results: FileResult[] = [];
  // Workers waiting for a file that runs alone, or for one to finish.
  const parked: (() => void)[] = [];
  const others = (k: number) => [...running.entries()].filter(([j, s]) => j !== k && s.file !== undefined);
  const wake = () => {
    for (const next of parked.splice(0)) next();
  };
  return new Promise((resolve) => {
    const start = (k: number) => {
      const child = spawn(process.execPath, [...workerCommand(runner), "--worker"], {
        stdio: ["pipe", "pipe", "pipe"],
        env: {
          ...process.env,
          HERDLESS_TEST_WORKER: String(k),
          HERDLESS_TEST_WORKERS: String(count),
          HERDLESS_SEED: String(seed),
        },
      });
      const slot: { child: ChildProcess; file: string | undefined } = { child, file: undefined };
      running.set(k, slot);
      let held = "";
      const next = () => {
        const busy = others(k);
        const head = queue[0];
        if (busy.some(([, s]) => alone.has(s.file!)) || (head !== undefined && alone.has(head) && busy.length > 0)) {
          slot.file = undefined;
          parked.push(next);
          return;
        }
        slot.file = queue.shift();
        if (slot.file === undefined) child.stdin!.end();
        else child.stdin!.write(`${slot.file}\n`);
      };
      createInterface({ input: child.stdout! }).on("line", (line) => {
        const at = line.indexOf(DONE);
        if (at < 0) {
          held += `${line}\n`;
          return;
        }
        held += line.slice(0, at);
        process.stdout.write(held);
        held = "";
        results.push(JSON.parse(line.slice(at + DONE.length)) as FileResult);
        slot.file = undefined;
        next();
        wake();
      });
      // A worker's stderr is the output of the file it is running (or of its shutdown).
      child.stderr!.on("data", (d) => (held += d));
      // "close", not "exit": the last file's result line may still be in the pipe when the process exits.
      child.on("close", (code, signal) => {
        running.delete(k);
        if (held !== "") process.stdout.write(held);
        if (slot.file !== undefined) {
          process.stdout.write(`\n  FAIL  worker ${k} exited (${signal ?? code}) while running ${slot.file}\n\n`);
          results.push({ file: slot.file, total: 1, passed: 0, skipped: 0, failed: true, ms: 0, suites: [] });
          slot.file = undefined;
          if (queue.length > 0) start(k);
          wake();
        } else if (code !== 0) {
          process.stdout.write(`\n  FAIL  worker ${k} exited (${signal ?? code}) after its last file\n\n`);
          results.push({ file: `(worker ${k})`, total: 0, passed: 0, skipped: 0, failed: true, ms: 0, suites: [] });
        }
        if (running.size === 0) resolve(results);
      });
      next();
    };
    for (let k = 0; k < Math.min(count, files.length); k++) start(k);
  });
}

/** The file each worker is running now, to name them when the run hangs; stops the workers. */
export function stopWorkers(): string[] {
  const files = [...running.values()].map((slot) => slot.file).filter((file) => file !== undefined);
  // A worker stops on SIGTERM through process.exit, so its servers are killed on the way out.
  for (const slot of running.values()) slot.child.kill("SIGTERM");
  return files;
}

/** In a worker: run each file named on stdin with `run`, then print its result after {@linkcode DONE}. */
export async function serveFiles(run: (file: string) => Promise<FileResult>): Promise<void> {
  process.on("SIGTERM", () => process.exit(1));
  // Output of a file goes to stdout in order with its result line, whatever wrote it.
  process.stderr.write = process.stdout.write.bind(process.stdout) as typeof process.stderr.write;
  for await (const file of createInterface({ input: process.stdin })) {
    if (file === "") continue;
    const result = await run(file);
    process.stdout.write(`${DONE}${JSON.stringify(result)}\n`);
  }
  // The parent closed our stdin: its pipe must not keep this worker alive.
  process.stdin.destroy();
}
