/**
 * The hit path in instructions, for A/B on a machine too noisy for
 * wall-clock: a fixed number of hits, run under callgrind, whose instruction
 * count repeats within a fraction of a percent whatever the load. Variants:
 *
 *   raw        `client.send(["GET", key])` then JSON.parse (what a hit costs at least)
 *   rawt       the same with `{ timeoutMs: 1000 }` (as the pipeline sends its GET)
 *   full       a remote hit through the bench's full pipeline
 *              (swr, xfetch, coalesce, lease, jitter, limit; RESP3)
 *   near       a near hit: near() in front of the same pipeline
 *
 * each sequential (`1`) or with 100 in flight (`100`), over the bench's 1,000
 * keys of 120-byte JSON values. Per-hit cost is the difference of two runs
 * (N2 - N1 hits) divided by N2 - N1, so start-up and the JIT's first
 * compilations cancel out (`bench/experiments/callgrind.sh hit_path` does
 * this). Bundle once, then run against any redis-server:
 *
 *   bench/node_modules/.bin/esbuild --bundle --platform=node --format=esm \
 *     bench/experiments/hit_path.ts --outfile=bench/.out/hit_path.mjs
 *   redis-server --port 6401 --save "" --appendonly no &
 *   valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file=/dev/null \
 *     node bench/.out/hit_path.mjs redis://127.0.0.1:6401 full 100 20000 2>&1 | grep refs
 *
 * Without valgrind it prints hits per second (meaningful on a quiet machine only).
 *
 * @module
 */
import process from "node:process";
import { connect, near, pipeline } from "../../mod.ts";
import { FULL, strategiesOf } from "../layers.ts";
import { hitData, KEYS, runHits, storeRaw } from "./hits.ts";

const [
  url = "redis://127.0.0.1:6379",
  variant = "full",
  inFlightText = "100",
  countText = "20000",
] = process.argv
  .slice(2);
const inFlight = Number(inFlightText);
const count = Number(countText);
if (
  !["raw", "rawt", "full", "near"].includes(variant) || !(inFlight >= 1) ||
  !(count >= 0)
) {
  throw new Error(
    "usage: hit_path.mjs <url> <raw|rawt|full|near> <in flight> <hits>",
  );
}

// Generous timeouts: under valgrind a reply can take longer than the default second.
const redis = await connect({ url, resp: 3, commandTimeoutMs: 60_000 });
const data = hitData();
const { ids, loaders } = data;
let get: (i: number) => Promise<unknown>;
let close = () => Promise.resolve();
if (variant === "raw" || variant === "rawt") {
  const keys = await storeRaw(redis, "hitpath:raw:", data);
  const options = variant === "raw" ? undefined : { timeoutMs: 1000 };
  get = async (i) => JSON.parse((await redis.send(["GET", keys[i % KEYS]!], options)) as string);
} else {
  const layers = strategiesOf(FULL);
  const cache = pipeline(
    {
      redis,
      ttlMs: 600_000,
      commandTimeoutMs: 60_000,
      namespace: `hitpath:${variant}`,
    },
    ...(variant === "near" ? [near(), ...layers] : layers),
  );
  await cache.clear();
  get = (i) => cache.get(ids[i % KEYS]!, loaders[i % KEYS]!);
  close = () => cache.close();
  for (let i = 0; i < KEYS; i++) await get(i);
  // A second pass: what a remote read brings in is what a near hit serves.
  for (let i = 0; i < KEYS; i++) await get(i);
  const stats = cache.stats();
  if (variant === "near" && stats.nearEntries !== KEYS) {
    throw new Error(`near tier holds ${stats.nearEntries} entries`);
  }
}

const filled = data.loads();
const started = performance.now();
await runHits(get, count, inFlight);
const ms = performance.now() - started;
if (data.loads() !== filled) {
  throw new Error(`${data.loads() - filled} loads while measuring hits`);
}
await close();
await redis.close();
console.log(
  `${variant} ${inFlight} in flight: ${count} hits in ${ms.toFixed(0)} ms (${(count / ms * 1000).toFixed(0)}/s)`,
);
