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
import { connect, pipeline } from "../../mod.ts";
import { CL, FULL, strategiesOf } from "../layers.ts";
import { hitData, KEYS, runHits, storeRaw } from "./hits.ts";

const [
  url = "redis://127.0.0.1:6379",
  variant = "full",
  inFlightText = "100",
  countText = "40000",
] = process.argv
  .slice(2);
const inFlight = Number(inFlightText);
const count = Number(countText);

let writes = 0;
const write = net.Socket.prototype.write;
net.Socket.prototype.write = function (this: net.Socket, ...args: unknown[]) {
  writes++;
  return (write as (...a: unknown[]) => boolean).apply(this, args);
} as typeof write;

const redis = await connect({ url, resp: 3, commandTimeoutMs: 60_000 });
const data = hitData();
const { ids, loaders } = data;
let get: (i: number) => Promise<unknown>;
let close = () => Promise.resolve();
if (variant === "raw") {
  const keys = await storeRaw(redis, `remoteab:raw:${process.pid}:`, data);
  get = async (i) => JSON.parse((await redis.send(["GET", keys[i % KEYS]!])) as string);
} else {
  const layers = strategiesOf(variant === "cl" ? CL : FULL);
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

await runHits(get, count / 4, inFlight); // warm-up: the JIT's first compilations
const filled = data.loads();
const w0 = writes;
const cpu = process.cpuUsage();
const t0 = performance.now();
await runHits(get, count, inFlight);
const ms = performance.now() - t0;
const used = process.cpuUsage(cpu);
if (data.loads() !== filled) {
  throw new Error(`${data.loads() - filled} loads while measuring hits`);
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
