/**
 * How many files of `strategies/` one cache hit runs: V8's precise coverage
 * is reset after a warm-up, then one hit is made (the README's call: a tuple
 * identity, a loader closure, `{ timeoutMs }`), and every file with a
 * function that ran is counted. A remote hit and a near hit, each through
 * `coalesce(), lease()` and through the full pipeline.
 *
 * Run from the repository root: `npm run bench:files` (starts its own
 * redis-server; `REDIS_URL` uses another). Runs the TypeScript sources through
 * tsx, so the files are the repository's own.
 *
 * @module
 */
import { Session } from "node:inspector/promises";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { connect, near, pipeline, type Strategy } from "../mod.ts";
import { CL, FULL, strategiesOf } from "./layers.ts";
import { startRedis } from "../test/support/redis_server.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const server = process.env.REDIS_URL === undefined ? await startRedis() : undefined;
const url = process.env.REDIS_URL ?? server!.url;

const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.startPreciseCoverage", {
  callCount: true,
  detailed: true,
});

interface Coverage {
  result: {
    url: string;
    functions: { functionName: string; ranges: { count: number }[] }[];
  }[];
}

/** The files of `strategies/` that ran since the last call (each call resets the counts), with their functions. */
async function ran(): Promise<Map<string, string[]>> {
  const { result } = (await session.post("Profiler.takePreciseCoverage")) as unknown as Coverage;
  const files = new Map<string, string[]>();
  for (const script of result) {
    if (!script.url.startsWith("file://")) continue;
    const path = fileURLToPath(script.url).slice(root.length);
    if (!path.startsWith("strategies/")) continue;
    const functions = script.functions.filter((f) => f.ranges[0]!.count > 0)
      .map((f) => f.functionName || "(anon)");
    if (functions.length > 0) files.set(path, functions);
  }
  return files;
}

type Row = { name: string; strategies: () => Strategy[]; near: boolean };
const rows: Row[] = [
  {
    name: "remote hit, coalesce(), lease()",
    strategies: () => strategiesOf(CL),
    near: false,
  },
  {
    name: "remote hit, full pipeline",
    strategies: () => strategiesOf(FULL),
    near: false,
  },
  {
    name: "near hit, near(), coalesce(), lease()",
    strategies: () => [near(), ...strategiesOf(CL)],
    near: true,
  },
];

const redis = await connect({ url, resp: 3 });
const value = { id: 7, name: "item 7", tags: ["bench"] };
let failed = false;
for (const row of rows) {
  const cache = pipeline({
    redis,
    ttlMs: 600_000,
    namespace: `bench:files:${row.near ? "n" : "r"}`,
  }, ...row.strategies());
  const get = () =>
    cache.get(
      ["item", 7],
      ({ signal }) => (signal.aborted ? undefined : value),
      { timeoutMs: 2_000 },
    );
  await cache.invalidate(["item", 7]);
  for (let i = 0; i < 2_000; i++) await get();
  const before = cache.stats();
  await ran();
  await get();
  const files = await ran();
  const after = cache.stats();
  const kind = row.near
    ? after.nearHits - before.nearHits
    : after.hits - before.hits - (after.nearHits - before.nearHits);
  if (kind !== 1 || after.loads !== before.loads) {
    console.error(
      `${row.name}: the measured get was not one ${row.near ? "near" : "remote"} hit`,
    );
    failed = true;
  }
  console.log(`${row.name}: ${files.size} files of strategies/ ran`);
  for (const [path, functions] of files) {
    console.log(`  ${path}: ${functions.join(", ")}`);
  }
  await cache.close();
}
await redis.close();
await session.post("Profiler.stopPreciseCoverage");
session.disconnect();
await server?.stop();
if (failed) process.exitCode = 1;
