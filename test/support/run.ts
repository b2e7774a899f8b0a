/**
 * The test runner for Node (under tsx and c8), Bun and Deno alike: finds the
 * `*.test.ts` files under `test/`, queues their uvu suites in a stable order,
 * then runs them one file after another. Optional arguments are substrings a
 * file's path must contain (`run.ts resp/decode lease`).
 */
import { readdirSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import process from "node:process";
import { seed } from "./random.ts";

const root = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "..");

function walk(dir: string, out: string[]): string[] {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (name === "support" || name === "node_modules") continue;
    if (statSync(path).isDirectory()) walk(path, out);
    else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

const filters = process.argv.slice(2).filter((a) => !a.startsWith("-")).map((a) => a.replace(/^test\//, ""));
const files = walk(root, []).filter((f) => filters.length === 0 || filters.some((p) => relative(root, f).includes(p)));
if (files.length === 0) {
  console.error(`no test files match ${JSON.stringify(filters)}`);
  process.exit(1);
}

const g = globalThis as unknown as { UVU_DEFER: number; UVU_INDEX: number; UVU_QUEUE: unknown[][] };
g.UVU_DEFER = 1;
const uvu = await import("uvu");
let index = 0;
for (const file of files) {
  g.UVU_INDEX = index++;
  g.UVU_QUEUE.push([relative(root, file)]);
  await import(pathToFileURL(file).href);
}
// uvu has no per-test timeout: a test that hangs must fail the run, not stall CI.
const limitMs = Number(process.env.HERDLESS_TEST_LIMIT_MS ?? 10 * 60_000);
const watchdog = setTimeout(() => {
  console.error(`\ntest run exceeded ${limitMs} ms: a test hangs`);
  process.exit(1);
}, limitMs);
watchdog.unref?.();
await uvu.exec();
clearTimeout(watchdog);
// Random draws (fast-check's included) all come from one seed: print it so
// a failure found by a random case can be replayed.
if ((process.exitCode ?? 0) !== 0) console.error(`\nrandom draws of this run: HERDLESS_SEED=${seed} replays them`);
// Suites close their servers in after-hooks; anything still open (a leaked
// socket) must not keep CI waiting forever.
const code = process.exitCode ?? 0;
setTimeout(() => {
  // Named by kind (TCPWRAP, Timeout...) where the runtime tells, so a leak can be traced.
  const info = (process as { getActiveResourcesInfo?: () => string[] }).getActiveResourcesInfo?.();
  const kinds = info === undefined ? "" : ` (${info.join(", ")})`;
  console.error(`warning: open handles kept the test process alive 2 s after the last suite${kinds}`);
  process.exit(code);
}, 2000).unref?.();
