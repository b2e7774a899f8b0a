/**
 * One app process of the Redis-down stories (started by
 * scenarios/redis_down.ts, never run by hand). Arguments: <lab redis url>
 * <worker id>.
 *
 * It serves one command at a time from its list on the lab's server: for
 * each row, one RESP3 client of the story's server and one cache (herdless'
 * full pipeline in one `onRedisDown` mode, or a recipe), warmed; then it
 * reports ready, blocks on the barrier until the parent releases every
 * process at once, and runs every row side by side under an open-loop load
 * while the parent kills the server or makes it refuse writes. The origin is
 * simulated per row and per process, so "at most one call per key per
 * process at a time" is counted where it can be broken.
 *
 * A row's first failure is the first sign its client gets of the fault: the
 * connection lost, or a command answered with a lost connection, a timeout
 * or a refused write. What a request waited after it is the measure of
 * whether gets still wait for a dead Redis.
 *
 * @module
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import process from "node:process";
import { setTimeout as sleep } from "node:timers/promises";
import {
  type CacheStats,
  connect,
  isConnectionError,
  isRedisReplyError,
  isTimeoutError,
  type RedisClient,
} from "../../../mod.ts";
import { seeded, zipf } from "../../shared/zipf.ts";
import { runLoad } from "../load/open_loop.ts";
import { SimOrigin } from "../load/origin.ts";
import { subStats } from "../rows/checks.ts";
import { type Counted, counted } from "../rows/counting.ts";
import { ROWS } from "../rows/layers.ts";
import { type LabSet, layerSet, recipeSet, type SetCache } from "../rows/sets.ts";
import { barrierKeys } from "./children.ts";
import type { OutageCommand, OutageReport, OutageRow, OutageRowReport } from "./outage_protocol.ts";
import { commands, released, runWorker } from "./worker_side.ts";

/** A fault as the client sees it: Redis gone, silent, or refusing writes. */
function isFault(error: unknown): boolean {
  return isConnectionError(error) || isTimeoutError(error) ||
    (isRedisReplyError(error) && (error.code === "OOM" || error.code === "READONLY"));
}

function setOf(row: OutageRow, cmd: OutageCommand): LabSet {
  return "mode" in row
    ? layerSet(ROWS - 1, cmd.layers, { label: row.label, onRedisDown: row.mode })
    : recipeSet(row.recipe, { staleMs: cmd.layers.staleMs });
}

/** The release, shared by the rows' failure listeners (undefined during the warm-up). */
const clock: { t0: number | undefined } = { t0: undefined };

/** What a row measures while it runs. */
interface Tally {
  /** When its client first failed (performance.now()). */
  firstFailure: number | undefined;
  /** The longest request begun after that, ms. */
  waited: number;
  /** Origin calls started while the fault lasted. */
  callsInFault: number;
}

interface Running {
  readonly row: OutageRow;
  readonly client: RedisClient;
  readonly wire: Counted<RedisClient>;
  readonly cache: SetCache;
  readonly origin: SimOrigin;
  readonly tally: Tally;
}

async function open(cmd: OutageCommand, row: OutageRow, index: number, id: number): Promise<Running> {
  const client = await connect({ url: cmd.url, resp: 3 });
  const set = setOf(row, cmd);
  const namespace = `${cmd.namespace}-r${index}`;
  const tally: Tally = { firstFailure: undefined, waited: 0, callsInFault: 0 };
  const failed = () => {
    // Before the clock (the warm-up) nothing counts: a NOSCRIPT or a slow first command is no fault.
    if (clock.t0 !== undefined) tally.firstFailure ??= performance.now();
  };
  const wire = counted(client, (error) => isFault(error) && failed());
  client.onEvent((event) => event.type === "disconnect" && failed());
  // Every process fills the keys before the clock: what is measured is the steady state and the fault.
  const warm = set.open(client, id, namespace, cmd.ttlMs, true);
  try {
    const value = () => sleep(cmd.originMs).then(() => "warm");
    await Promise.all(Array.from({ length: cmd.keys }, (_, k) => warm.get(k, value, 20_000)));
  } finally {
    await warm.close();
  }
  const buckets = Math.ceil((cmd.durationMs + cmd.timeoutMs) / cmd.bucketMs);
  return {
    row,
    client,
    wire,
    cache: set.open(wire.redis, id, namespace, cmd.ttlMs, false),
    origin: new SimOrigin({ baseMs: cmd.originMs, bucketMs: cmd.bucketMs, buckets }),
    tally,
  };
}

async function story(cmd: OutageCommand, id: number, go: () => Promise<void>): Promise<OutageReport> {
  clock.t0 = undefined;
  const opened: Running[] = [];
  try {
    for (const [i, row] of cmd.rows.entries()) opened.push(await open(cmd, row, i, id));
    await go();
    const t0 = performance.now();
    clock.t0 = t0;
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const before = opened.map((r) => ({ stats: r.cache.stats(), sent: r.wire.sent() }));
    for (const r of opened) r.origin.start(t0);
    const loads = await Promise.all(opened.map((r) => {
      // The same key sequence for every row of this process; another one in each process.
      const pick = zipf(cmd.keys, cmd.zipf, seeded(7919 * (id + 1)));
      const loader = (key: number) => () => {
        const at = performance.now() - t0;
        if (at >= cmd.fault.fromMs && at < cmd.fault.toMs) r.tally.callsInFault++;
        return r.origin.call(key);
      };
      return runLoad({
        t0,
        ratePerSec: cmd.ratePerSec,
        durationMs: cmd.durationMs,
        // A recipe's gets wait in the client's queue through the outage: seconds of requests outstanding.
        maxOutstanding: cmd.ratePerSec * 20,
        drainMs: 15_000,
        request: () => {
          const key = pick();
          const started = performance.now();
          const after = r.tally.firstFailure !== undefined;
          const reply = r.cache.get(key, loader(key), cmd.timeoutMs);
          if (after) {
            const settled = () => void (r.tally.waited = Math.max(r.tally.waited, performance.now() - started));
            reply.then(settled, settled);
          }
          return reply;
        },
      });
    }));
    delay.disable();
    // close() waits for the loads and refreshes still running: the origin's counts are final after it.
    await Promise.all(opened.map((r) => r.cache.close()));
    const rows = opened.map((r, i): OutageRowReport => {
      const load = loads[i]!;
      const stats: CacheStats = subStats(r.cache.stats(), before[i]!.stats);
      return {
        ...load,
        label: r.row.label,
        latencies: Array.from(load.latencies, (x) => Math.round(x * 10) / 10),
        stats,
        originCalls: r.origin.calls,
        originCallsInFault: r.tally.callsInFault,
        originErrors: r.origin.errors,
        peak: r.origin.peak,
        peakPerKey: r.origin.peakPerKey,
        series: r.origin.series,
        firstFailureMs: r.tally.firstFailure === undefined ? -1 : Math.round(r.tally.firstFailure - t0),
        waitedAfterFailure: r.tally.waited,
        commands: r.wire.sent() - before[i]!.sent,
      };
    });
    return { id: String(id), rows, loopDelay: { p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 } };
  } finally {
    for (const r of opened) r.client.destroy();
  }
}

async function main(): Promise<void> {
  const [url, idArg] = process.argv.slice(-2) as [string, string];
  const id = Number(idArg);
  const control = await connect({ url });
  await control.send(["RPUSH", "lab-outage:hello", idArg]);
  // A story's warm-up and run take a minute at most; the next command comes right after.
  for await (const cmd of commands<OutageCommand>(control, `lab-outage:cmd:${id}`, `worker ${id}`, 120)) {
    const k = barrierKeys(cmd.namespace);
    const report = await story(cmd, id, () => released(control, k, idArg, 60));
    await control.send(["RPUSH", k.result, JSON.stringify(report)]);
  }
  await control.close();
}

runWorker(main);
