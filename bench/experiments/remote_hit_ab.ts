/**
 * Remote hits (no near tier) in client CPU and socket writes per get, for an
 * A/B of two checkouts on a loaded machine: process.cpuUsage() (user + sys)
 * over the timed loop only, and the socket writes counted by wrapping
 * `net.Socket.prototype.write`. Variants:
 *
 *   raw        `client.send(["GET", key])` + JSON.parse
 *   cl         `pipeline(coalesce(), lease())`, string identity built once
 *   full       the bench's full pipeline, string identity + loader built once
 *   readme     the full pipeline, README call: tuple + closure + `{ timeoutMs: 2_000 }`
 *
 *   taskset -c 1 node --import tsx bench/experiments/remote_hit_ab.ts redis://127.0.0.1:6379 full 100 40000
 *
 * @module
 */
import net from "node:net";
import process from "node:process";
import { connect } from "../../resp/mod.ts";
import { coalesce, jitter, lease, limit, pipeline, swr, xfetch } from "../../mod.ts";

const [
  url = "redis://127.0.0.1:6379",
  variant = "full",
  inFlightText = "100",
  countText = "40000",
] = process.argv
  .slice(2);
const inFlight = Number(inFlightText);
const count = Number(countText);
const KEYS = 1_000;

let writes = 0;
const write = net.Socket.prototype.write;
net.Socket.prototype.write = function (this: net.Socket, ...args: unknown[]) {
  writes++;
  return (write as (...a: unknown[]) => boolean).apply(this, args);
} as typeof write;

function value(i: number) {
  const n = String(i).padStart(6, "0");
  return {
    id: i,
    sku: `SKU-${n}`,
    name: `item ${n}`,
    price: 1000 + (i % 9000),
    stock: i % 97,
    tags: ["bench", "hot"],
    pad: "x".repeat(24),
  };
}

const redis = await connect({ url, resp: 3, commandTimeoutMs: 60_000 });
const ids = Array.from({ length: KEYS }, (_, i) => `item:${i}`);
const values = ids.map((_, i) => value(i));
let loads = 0;
const loaders = values.map((v) => () => {
  loads++;
  return v;
});
let get: (i: number) => Promise<unknown>;
let close = () => Promise.resolve();
if (variant === "raw") {
  const keys = ids.map((id) => `remoteab:raw:${process.pid}:${id}`);
  for (let i = 0; i < KEYS; i++) {
    await redis.send([
      "SET",
      keys[i]!,
      JSON.stringify(values[i]),
      "PX",
      600_000,
    ]);
  }
  get = async (i) => JSON.parse((await redis.send(["GET", keys[i % KEYS]!])) as string);
} else {
  const layers = variant === "cl" ? [coalesce(), lease()] : [
    swr({ staleMs: 60_000 }),
    xfetch(),
    coalesce(),
    lease(),
    jitter({ spreadMs: 1_000 }),
    limit({ concurrency: 64 }),
  ];
  const cache = pipeline({
    redis,
    ttlMs: 600_000,
    namespace: `remoteab:${variant}:${process.pid}`,
  }, ...layers);
  await cache.clear();
  get = variant === "readme"
    ? (i) => {
      const k = i % KEYS;
      return cache.get(["item", k], ({ signal }) => {
        signal.throwIfAborted();
        return loaders[k]!();
      }, { timeoutMs: 2_000 });
    }
    : (i) => cache.get(ids[i % KEYS]!, loaders[i % KEYS]!);
  close = () => cache.close();
  for (let i = 0; i < KEYS; i++) await get(i);
}

async function run(n: number) {
  let next = 0;
  async function lane() {
    while (next < n) {
      const i = next++;
      const got = (await get(i)) as { id: number };
      if (got.id !== i % KEYS) {
        throw new Error(`hit ${i} returned ${JSON.stringify(got)}`);
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(inFlight, n) }, lane));
}
await run(count / 4); // warm-up: the JIT's first compilations
const filled = loads;
const w0 = writes;
const cpu = process.cpuUsage();
const t0 = performance.now();
await run(count);
const ms = performance.now() - t0;
const used = process.cpuUsage(cpu);
if (loads !== filled) {
  throw new Error(`${loads - filled} loads while measuring hits`);
}
const w = writes - w0;
await close();
await redis.close();
console.log(
  JSON.stringify({
    variant,
    inFlight,
    cpuUsPerGet: +((used.user + used.system) / count).toFixed(3),
    writesPerGet: +(w / count).toFixed(4),
    wallUsPerGet: +(ms * 1000 / count).toFixed(3),
  }),
);
