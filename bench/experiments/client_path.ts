/**
 * The RESP client's own hot path in instructions: a fixed number
 * of operations, run under callgrind, whose instruction count repeats within
 * a few percent whatever else loads the machine. Scenarios (the client rows
 * of `npm run bench`, 64-byte values over 1,000 keys):
 *
 *   get100   `send(["GET", k])`, 100 in flight
 *   getseq   one awaited GET after another
 *   set1000  SET in batches of 1,000 (issued together, then awaited)
 *   eval100  `EVALSHA <sha> 1 k`, 100 in flight (a script that GETs its key)
 *
 * Per-operation cost is the difference of two runs (N2 - N1 operations)
 * divided by N2 - N1, so start-up and the JIT's first compilations cancel
 * (`bench/experiments/callgrind.sh client_path` does this). Bundle once, then run
 * against any redis-server:
 *
 *   node_modules/.bin/esbuild --bundle --platform=node --format=esm \
 *     bench/experiments/client_path.ts --outfile=bench/.out/client_path.mjs
 *   redis-server --port 6402 --save "" --appendonly no &
 *   node bench/.out/client_path.mjs redis://127.0.0.1:6402 get100 20000
 *
 * Without valgrind it prints operations per second (meaningful on a quiet machine only).
 *
 * @module
 */
import process from "node:process";
import { connect } from "../../resp/mod.ts";

const [
  url = "redis://127.0.0.1:6379",
  scenario = "get100",
  countText = "20000",
] = process.argv.slice(2);
const count = Number(countText);
const KEYS = 1_000;
if (
  !["get100", "getseq", "set1000", "eval100"].includes(scenario) ||
  !(count >= 0)
) {
  throw new Error(
    "usage: client_path.mjs <url> <get100|getseq|set1000|eval100> <operations>",
  );
}

// No command timeout, as in `npm run bench` (a timeout adds a deadline heap push and removal per command).
const redis = await connect({ url });
const keys = Array.from({ length: KEYS }, (_, i) => `clientpath:${i}`);
const value = "v".repeat(64);
for (let i = 0; i < KEYS; i++) await redis.send(["SET", keys[i]!, value]);
const sha = (await redis.send([
  "SCRIPT",
  "LOAD",
  "return redis.call('GET', KEYS[1])",
])) as string;

function check(got: unknown, i: number) {
  if (got !== value) {
    throw new Error(`operation ${i} returned ${JSON.stringify(got)}`);
  }
}

const writesBefore = redis.writes;
const started = performance.now();
let next = 0;
if (scenario === "getseq") {
  for (let i = 0; i < count; i++) {
    check(await redis.send(["GET", keys[i % KEYS]!]), i);
  }
} else if (scenario === "set1000") {
  for (let done = 0; done < count; done += 1000) {
    const batch: Promise<unknown>[] = [];
    for (let i = 0; i < 1000; i++) {
      batch.push(redis.send(["SET", keys[i]!, value]));
    }
    for (const reply of await Promise.all(batch)) {
      if (reply !== "OK") throw new Error(`SET returned ${reply}`);
    }
  }
} else {
  const evalsha = scenario === "eval100";
  const lane = async () => {
    while (next < count) {
      const i = next++;
      const k = keys[i % KEYS]!;
      check(await redis.send(evalsha ? ["EVALSHA", sha, 1, k] : ["GET", k]), i);
    }
  };
  await Promise.all(Array.from({ length: 100 }, lane));
}
const ms = performance.now() - started;
// Commands per socket write: how replies happened to be chunked, which moves
// the 100-in-flight instruction counts by a few percent from run to run.
const perWrite = count / Math.max(1, redis.writes - writesBefore);
await redis.close();
console.log(
  `${scenario}: ${count} operations in ${ms.toFixed(0)} ms (${(count / ms * 1000).toFixed(0)}/s, ${
    perWrite.toFixed(1)
  } per write)`,
);
