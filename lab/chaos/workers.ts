/**
 * Starting the worker processes and talking to them: their report lines go
 * to the collector, command lines go to their stdin. A worker that exits
 * before it is told to stop is recorded as crashed.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import process from "node:process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { settings } from "./config.ts";
import type { Collector } from "./metrics.ts";
import type { Report } from "./protocol.ts";

const workerScript = fileURLToPath(new URL("./worker.ts", import.meta.url));

export interface Workers {
  broadcast(line: string): void;
  /**
   * Send a command line to every worker and collect each one's answer of type `t`; after `withinMs`, whatever
   * arrived (a worker that died never answers).
   */
  ask<T extends Report["t"]>(line: string, t: T, withinMs: number): Promise<Extract<Report, { t: T }>[]>;
  /** Workers that exited on their own, or did not exit when stopped. */
  readonly failed: string[];
  /** Tell every worker to drain and exit; resolves when all have (or were killed for not doing so). */
  stop(): Promise<void>;
}

/**
 * Spawn `configs.length` workers (each given its config as JSON in argv, with this process's runtime flags, e.g.
 * `--import tsx`) and wait until each is ready. `script` is `worker.ts` unless another speaking the same protocol is named (`workerd_driver.ts`).
 */
export async function startWorkers(
  configs: readonly { id: number }[],
  collector: Collector,
  script = workerScript,
): Promise<Workers> {
  const failed: string[] = [];
  let stopping = false;
  const children: { child: ChildProcess; exited: Promise<void> }[] = [];
  const waiting = new Map<Report["t"], { answers: Report[]; done: () => void }>();
  const ready = configs.map((config) =>
    new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, [...process.execArgv, script, JSON.stringify(config)], {
        stdio: ["pipe", "pipe", "inherit"],
      });
      const exited = new Promise<void>((done) =>
        child.on("exit", (code, signal) => {
          if (!stopping || code !== 0) failed.push(`worker ${config.id} exited (code ${code}, signal ${signal})`);
          reject(new Error(`worker ${config.id} exited before it was ready`));
          done();
        })
      );
      children.push({ child, exited });
      createInterface({ input: child.stdout! }).on("line", (line) => {
        let report: Report;
        try {
          report = JSON.parse(line) as Report;
        } catch {
          process.stderr.write(`worker ${config.id}: ${line}\n`);
          return;
        }
        if (report.t === "ready") resolve();
        const waiter = waiting.get(report.t);
        if (waiter !== undefined) {
          waiter.answers.push(report);
          if (waiter.answers.length === children.length) waiter.done();
        }
        collector.add(config.id, report);
      });
    })
  );
  await Promise.all(ready);
  return {
    failed,
    broadcast(line) {
      for (const { child } of children) child.stdin?.write(`${line}\n`);
    },
    async ask(line, t, withinMs) {
      const answers: Report[] = [];
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((done) => {
        waiting.set(t, { answers, done });
        timer = setTimeout(done, withinMs);
        for (const { child } of children) child.stdin?.write(`${line}\n`);
      });
      clearTimeout(timer);
      waiting.delete(t);
      return answers as Extract<Report, { t: typeof t }>[];
    },
    async stop() {
      stopping = true;
      for (const { child } of children) child.stdin?.end("stop\n");
      // A worker drains for at most hangMs, then closes with the same bound twice.
      const limit = new Promise<"late">((r) => setTimeout(() => r("late"), 3 * settings.hangMs + 5000).unref());
      await Promise.all(children.map(async ({ child, exited }, id) => {
        if ((await Promise.race([exited, limit])) === "late") {
          failed.push(`worker ${id} did not exit after stop`);
          child.kill("SIGKILL");
        }
      }));
    },
  };
}
