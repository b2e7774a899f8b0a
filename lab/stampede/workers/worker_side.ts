/**
 * The worker's side of the talk with the parent (workers/children.ts is
 * the parent's): the commands it is sent, one at a time, on its list of the
 * lab's server; the barrier that releases every worker at once; and the
 * exit, with the stack on stderr, which the parent shows when a worker dies.
 * Every wait is a BLPOP with a timeout: a worker whose parent is gone exits.
 *
 * @module
 */
import process from "node:process";
import type { RedisClient } from "../../../resp/mod.ts";

/** Each command pushed to `inbox` until the parent sends `{ quit: true }`; `who` names the worker in errors. */
export async function* commands<T>(control: RedisClient, inbox: string, who: string, seconds = 60): AsyncGenerator<T> {
  for (;;) {
    const popped = (await control.send(["BLPOP", inbox, seconds])) as [string, string] | null;
    if (popped === null) throw new Error(`${who}: no command for ${seconds} s, the parent is gone`);
    const cmd = JSON.parse(popped[1]) as T | { quit: true };
    if (typeof cmd === "object" && cmd !== null && "quit" in cmd) return;
    yield cmd as T;
  }
}

/** Say ready on `keys.ready`, then wait on `keys.go` until the parent releases every worker with one RPUSH. */
export async function released(
  control: RedisClient,
  keys: { ready: string; go: string },
  who: string,
  seconds = 30,
): Promise<void> {
  await control.send(["RPUSH", keys.ready, who]);
  if ((await control.send(["BLPOP", keys.go, seconds])) === null) throw new Error(`${who}: never released`);
}

/** Run a worker's `main`: exit 0 when it returns, 1 with its stack on stderr when it throws. */
export function runWorker(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    },
  );
}
