/**
 * Worker OS processes for multi-process tests: each runs a TypeScript file
 * under the runtime running the tests (Node through tsx, Bun, Deno), reports
 * ready on a Redis list, and is released with the others through a Redis
 * barrier, so their work really overlaps.
 */
import { spawn } from "node:child_process";
import process from "node:process";
import { fileURLToPath } from "node:url";
import type { RedisClient } from "../../resp/client.ts";
import type { CacheEvent } from "../../strategies/events.ts";

/** The argv that runs `file` (a path) under the current runtime. */
export function workerCommand(file: string): string[] {
  const g = globalThis as { Bun?: unknown; Deno?: unknown };
  if (g.Bun !== undefined) return [file];
  if (g.Deno !== undefined) return ["run", "-A", file];
  return ["--import", "tsx", file];
}

/**
 * Start one process per entry of `argvs` running `file` with those
 * arguments, wait until each has pushed its id to `<namespace>:ready`,
 * release them all at once (`<namespace>:go`), and resolve each one's
 * stdout once it exits 0 (reject with its stderr otherwise).
 */
export async function runWorkers(
  control: RedisClient,
  file: URL,
  namespace: string,
  argvs: readonly string[][],
): Promise<string[]> {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const outputs = argvs.map((args, i) => {
    const child = spawn(process.execPath, [...workerCommand(fileURLToPath(file)), ...args], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (err += d));
    return new Promise<string>((resolve, reject) =>
      child.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`worker ${i} exited ${code}: ${err}`))))
    );
  });
  const exited = Promise.all(outputs).then(() => null, () => null);
  for (let i = 0; i < argvs.length; i++) {
    const ready = await Promise.race([control.send(["BLPOP", `${namespace}:ready`, 30]), exited]);
    if (ready === null) {
      await Promise.all(outputs);
      throw new Error("a worker exited before it was ready");
    }
  }
  await control.send(["RPUSH", `${namespace}:go`, ...argvs.map((_, i) => i)]);
  return await Promise.all(outputs);
}

/**
 * A worker's side of a stampede across processes: `onEvent` reports this
 * process on `<namespace>:parked` (`<id>:lease-won` or `<id>:wait`) the first
 * time one of its callers wins the lease or waits on it; `load` is the
 * origin, a Redis counter (INCR) so calls are counted across processes, that
 * answers only once `total` processes are parked, so the race is forced, not
 * hoped for.
 */
export function stampedeWorker(control: RedisClient, namespace: string, id: string, total: number) {
  let parked = false;
  return {
    onEvent(event: CacheEvent): void {
      if (parked || (event.type !== "wait" && event.type !== "lease-won")) return;
      parked = true;
      void control.send(["RPUSH", `${namespace}:parked`, `${id}:${event.type}`]);
    },
    async load(): Promise<string> {
      const call = Number(await control.send(["INCR", `${namespace}:origin`]));
      const deadline = Date.now() + 15_000;
      while (Number(await control.send(["LLEN", `${namespace}:parked`])) < total) {
        if (Date.now() > deadline) throw new Error("the other workers never joined the race");
        await new Promise((r) => setTimeout(r, 5));
      }
      return `value-${call}`;
    },
  };
}
