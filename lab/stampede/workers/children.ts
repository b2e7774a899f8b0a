/**
 * Worker processes of the multi-process scenarios (cold burst, near cache):
 * spawned with the lab's own runtime flags, watched so that one dying early
 * fails the scenario at once (with its stderr) instead of leaving the parent
 * waiting, and always killed at the end. The parent talks to them through
 * Redis lists; `pop` is the bounded wait on one.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import process from "node:process";
import type { RedisClient } from "../../../resp/mod.ts";

/** The running workers. */
export interface Workers {
  /** `p`, or the first worker's early exit, whichever comes first. */
  race<T>(p: Promise<T>): Promise<T>;
  /** SIGKILL every worker still running. */
  kill(): void;
  /** Resolves when every worker has exited. */
  exited(): Promise<unknown>;
}

/**
 * The Redis lists of one row's barrier: each worker pushes to `ready` once
 * set up, blocks on `go` until the parent's one RPUSH releases them all,
 * and pushes its report to `result`.
 */
export function barrierKeys(namespace: string): { ready: string; go: string; result: string } {
  return { ready: `${namespace}:ready`, go: `${namespace}:go`, result: `${namespace}:result` };
}

/** Pop one element of `key`, or fail naming what did not arrive. */
export async function pop(redis: RedisClient, key: string, seconds: number, what: string): Promise<string> {
  const popped = (await redis.send(["BLPOP", key, seconds])) as [string, string] | null;
  if (popped === null) throw new Error(`${what} did not arrive within ${seconds} s`);
  return popped[1];
}

/**
 * Tell every worker to quit (`{ quit: true }` on each of `inboxes`; none for
 * workers that exit by themselves), then wait for them to exit, 5 s at most:
 * the caller's `kill()` ends any still running.
 */
export async function dismiss(workers: Workers, control: RedisClient, inboxes: readonly string[]): Promise<void> {
  for (const inbox of inboxes) await control.send(["RPUSH", inbox, JSON.stringify({ quit: true })]);
  // unref: the wait never holds the process.
  await workers.race(Promise.race([workers.exited(), new Promise((r) => setTimeout(r, 5000).unref())]));
}

/** The end of a scenario's workers, whatever happened: SIGKILL any still running, delete the lab's lists `keys`, close `control`. */
export async function endWorkers(workers: Workers, control: RedisClient, keys: readonly string[]): Promise<void> {
  workers.kill();
  if (keys.length > 0) await control.send(["DEL", ...keys]).catch(() => {});
  control.destroy();
}

/**
 * Start `count` workers running `script` with `argsOf(i)`; `label` names the
 * scenario in errors. A worker exiting with a non-zero code fails `race`.
 */
export function startWorkers(label: string, script: string, count: number, argsOf: (i: number) => string[]): Workers {
  const children: ChildProcess[] = [];
  let failed: (error: Error) => void = () => {};
  const failure = new Promise<never>((_, reject) => (failed = reject));
  failure.catch(() => {}); // Observed through race(); never unhandled.
  for (let i = 0; i < count; i++) {
    // The parent's own --import tsx (process.execArgv) runs the worker's TypeScript too.
    const child = spawn(process.execPath, [...process.execArgv, script, ...argsOf(i)], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (d) => (stderr = (stderr + d).slice(-2000)));
    child.on("exit", (code) => {
      if (code !== 0) failed(new Error(`${label}: worker ${i} exited with ${code}: ${stderr}`));
    });
    children.push(child);
  }
  return {
    race: <T>(p: Promise<T>): Promise<T> => Promise.race([p, failure]),
    kill: () => children.forEach((c) => c.exitCode === null && c.kill("SIGKILL")),
    exited: () =>
      Promise.all(children.map((c) => (c.exitCode !== null ? undefined : new Promise((r) => c.once("exit", r))))),
  };
}
