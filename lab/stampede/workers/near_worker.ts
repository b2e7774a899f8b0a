/**
 * One OS process of the near-cache scenario (started by scenarios/near.ts,
 * never run by hand). Arguments: <redis url> <worker id> <writer|reader>.
 *
 * Like the cold burst's worker, it serves one command at a time from its
 * Redis list: build the row's cache, warm it, report ready, block on the
 * barrier (BLPOP) until the parent releases everyone with one RPUSH, run,
 * report. Every stamp is `process.hrtime.bigint()` minus the parent's base:
 * the monotonic clock all processes on the machine share.
 *
 * The writer rewrites the hot keys round-robin: it records the new version in
 * the origin (a Redis key standing for the database), then `cache.set()`s it,
 * stamping the send and the acknowledgement. A reader runs a few loops of
 * `cache.get()` over the keys, stamping each read's start and end, pausing
 * on a timer between reads so invalidation pushes are handled as they arrive
 * (a loop of near hits alone would never let the socket be read).
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { join } from "node:path";
import process from "node:process";
import { setTimeout as sleep } from "node:timers/promises";
import { connect } from "../../../resp/mod.ts";
import { type Cache, coalesce, lease, near, pipeline } from "../../../mod.ts";
import {
  type NearCommand,
  nearKeys,
  type NearValue,
  nearValue,
  type ReaderReport,
  type WriterReport,
} from "./near_protocol.ts";
import { commands, released, runWorker } from "./worker_side.ts";

const TTL_MS = 60_000;
// A reader's log is bounded: past this many reads it stops recording and reading (16 MiB of stamps).
const MAX_READS = 500_000;

function cacheFor(redis: Awaited<ReturnType<typeof connect>>, cmd: NearCommand, withNear: boolean): Cache<NearValue> {
  const strategies = withNear ? [near(), coalesce(), lease()] : [coalesce(), lease()];
  return pipeline<NearValue>({ redis, ttlMs: TTL_MS, namespace: cmd.namespace }, ...strategies);
}

async function write(redis: Awaited<ReturnType<typeof connect>>, cmd: NearCommand, go: () => Promise<bigint>) {
  const k = nearKeys(cmd.namespace);
  const base = BigInt(cmd.base);
  // The writer's cache has no near tier: its set() is a plain publish.
  const cache = cacheFor(redis, cmd, false);
  const versions = new Array<number>(cmd.keys).fill(0);
  for (let key = 0; key < cmd.keys; key++) {
    await redis.send(["SET", k.db(key), 0]);
    await cache.set(["hot", key], nearValue(0));
  }
  const report: WriterReport = { writes: [], errors: [] };
  const start = await go();
  const until = start + BigInt((cmd.durationMs - cmd.tailMs) * 1e6);
  for (let i = 0; process.hrtime.bigint() < until; i++) {
    const key = i % cmd.keys;
    const v = ++versions[key]!;
    try {
      await redis.send(["SET", k.db(key), v]);
      const sent = process.hrtime.bigint();
      await cache.set(["hot", key], nearValue(v));
      const acked = process.hrtime.bigint();
      report.writes.push([key, v, Number(sent - base), Number(acked - base)]);
    } catch (error) {
      report.errors.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    }
    await sleep(cmd.writeEveryMs);
  }
  await cache.close();
  return report;
}

async function read(
  redis: Awaited<ReturnType<typeof connect>>,
  origin: Awaited<ReturnType<typeof connect>>,
  id: string,
  cmd: NearCommand,
  go: () => Promise<bigint>,
): Promise<ReaderReport> {
  const k = nearKeys(cmd.namespace);
  const base = BigInt(cmd.base);
  const cache = cacheFor(redis, cmd, cmd.withNear);
  let loads = 0;
  let inflight = 0;
  let peak = 0;
  // The origin: the database record the writer updates before each set() (expected unused after warm-up).
  const loader = async (ctx: { identity: unknown }): Promise<NearValue> => {
    loads++;
    peak = Math.max(peak, ++inflight);
    try {
      const key = (ctx.identity as [string, number])[1];
      return nearValue(Number(await origin.send(["GET", k.db(key)]) ?? -1));
    } finally {
      inflight--;
    }
  };
  // Warm: twice per key, so that with near() the second read is kept near.
  for (let pass = 0; pass < 2; pass++) for (let key = 0; key < cmd.keys; key++) await cache.get(["hot", key], loader);
  const warmLoads = loads;
  const before = cache.stats();
  const log = new Float64Array(MAX_READS * 4);
  let n = 0;
  const report: ReaderReport = {
    id,
    reads: 0,
    errors: 0,
    timeouts: 0,
    errorSamples: [],
    loads: 0,
    peak: 0,
    loopDelay: { p99: 0, max: 0 },
    stats: before,
  };
  const delay = monitorEventLoopDelay({ resolution: 5 });
  const samples = new Map<string, string>();
  const start = await go();
  const until = start + BigInt(cmd.durationMs * 1e6);
  delay.enable();
  let next = 0;
  const loop = async () => {
    while (n < MAX_READS) {
      const startedAt = process.hrtime.bigint();
      if (startedAt >= until) break;
      const key = next++ % cmd.keys;
      try {
        const value = await cache.get(["hot", key], loader, { timeoutMs: 2000 });
        const at = n++ * 4;
        log[at] = key;
        log[at + 1] = value.v;
        log[at + 2] = Number(startedAt - base);
        log[at + 3] = Number(process.hrtime.bigint() - base);
      } catch (error) {
        const e = error as Error;
        if (e?.name === "TimeoutError") report.timeouts++;
        else report.errors++;
        samples.set(e?.name ?? "?", `${e?.name}: ${e?.message}`);
      }
      // A timer, not setImmediate: a read loop that never sleeps keeps the process at 100% CPU,
      // and four of them on a small machine measure the scheduler, not the cache. Between two
      // reads invalidation pushes are read off the socket as they arrive.
      await sleep(cmd.pauseMs);
    }
  };
  await Promise.all(Array.from({ length: cmd.loops }, loop));
  delay.disable();
  // nearEntries is a gauge (close() empties the tier): keep its value at the end of the run.
  const entries = cache.stats().nearEntries;
  await cache.close();
  const after = cache.stats();
  for (const key of Object.keys(after) as (keyof typeof after)[]) after[key] -= before[key];
  after.nearEntries = entries;
  writeFileSync(join(cmd.dir, `reader-${id}.bin`), log.subarray(0, n * 4));
  return {
    ...report,
    reads: n,
    loads: loads - warmLoads,
    peak,
    loopDelay: { p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 },
    stats: after,
    errorSamples: [...samples.values()],
  };
}

async function main(): Promise<void> {
  const [url, id, role] = process.argv.slice(-3) as [string, string, "writer" | "reader"];
  const control = await connect({ url });
  const origin = await connect({ url });
  const inbox = `lab-near:cmd:${role}-${id}`;
  await control.send(["RPUSH", "lab-near:hello", `${role}-${id}`]);
  for await (const cmd of commands<NearCommand>(control, inbox, `${role} ${id}`)) {
    const k = nearKeys(cmd.namespace);
    const go = async () => {
      await released(control, k, `${role}-${id}`);
      return process.hrtime.bigint();
    };
    // A fresh RESP3 connection per row: no tracking state carries over from the previous row's cache.
    const redis = await connect({ url, resp: 3 });
    const report = role === "writer" ? await write(redis, cmd, go) : await read(redis, origin, id, cmd, go);
    await redis.close();
    await control.send(["RPUSH", k.result, JSON.stringify(report)]);
  }
  await Promise.all([control, origin].map((c) => c.close()));
}

runWorker(main);
