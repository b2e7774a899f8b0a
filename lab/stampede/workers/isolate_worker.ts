/**
 * One OS process of the isolates scenario (started by scenarios/isolates.ts,
 * never run by hand). Arguments: <redis url> <worker id> <clients> <namespace>
 * <origin ms>.
 *
 * It plays `clients` Worker requests, each one isolate's request as the
 * docs/workers.md writes it: `connect({ lazyConnect })`,
 * a pipeline built for the request, one `get`, `cache.close()`,
 * `redis.close()`. It reports ready, blocks on the barrier (BLPOP) until the
 * parent releases every process with one RPUSH, runs its requests at once
 * and pushes back latencies, socket writes and origin calls.
 *
 * Nothing else of this process talks to Redis between the release and the
 * report (the origin counts in memory), so the parent's INFO commandstats
 * delta is the requests' own traffic plus the barrier's BLPOP and RPUSH.
 *
 * @module
 */
import process from "node:process";
import { setTimeout as sleep } from "node:timers/promises";
import { connect } from "../../../resp/mod.ts";
import { type CacheStats, coalesce, lease, pipeline } from "../../../mod.ts";
import { addStats } from "../rows/checks.ts";
import { barrierKeys } from "./children.ts";
import { released, runWorker } from "./worker_side.ts";

/** What one isolates worker reports. */
export interface IsolateReport {
  id: string;
  /** ms from the release to each request's settled `get` (connect included). */
  latencies: number[];
  ok: number;
  errors: number;
  errorSamples: string[];
  /** Socket writes of every request's client (each write carries one tick's commands). */
  writes: number;
  /** Origin calls this process made. */
  originCalls: number;
  /** The requests' caches' counters, summed. */
  stats: CacheStats | undefined;
}

/** The settings a pass changes; an absent one keeps its default. */
export interface IsolateSettings {
  commandTimeoutMs?: number;
  leaseMs?: number;
  waitMs?: number;
}

// Only a setting that is there: an explicit undefined is not the default to every option check.
function pick<K extends keyof IsolateSettings>(s: IsolateSettings, k: K): Pick<IsolateSettings, K> {
  return (s[k] === undefined ? {} : { [k]: s[k] }) as Pick<IsolateSettings, K>;
}

async function main(): Promise<void> {
  const [url, id, clientsArg, namespace, originMsArg, settingsArg] = process.argv.slice(-6) as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const settings = JSON.parse(settingsArg) as IsolateSettings;
  const control = await connect({ url });
  let originCalls = 0;
  const loader = async (): Promise<string> => {
    originCalls++;
    await sleep(Number(originMsArg));
    return `value-${id}`;
  };
  const barrier = barrierKeys(namespace);
  await released(control, barrier, id);
  const releasedAt = performance.now();
  const report: IsolateReport = {
    id,
    latencies: [],
    ok: 0,
    errors: 0,
    errorSamples: [],
    writes: 0,
    originCalls: 0,
    stats: undefined,
  };
  const samples = new Set<string>();
  await Promise.all(
    Array.from({ length: Number(clientsArg) }, async () => {
      // One isolate's request: its own client and cache, gone when the request is.
      const redis = await connect({ url, lazyConnect: true });
      const cache = pipeline<string>(
        { redis, ttlMs: 60_000, namespace, ...pick(settings, "commandTimeoutMs") },
        coalesce(),
        lease({ ...pick(settings, "leaseMs"), ...pick(settings, "waitMs") }),
      );
      try {
        await cache.get("cold", loader);
        report.ok++;
      } catch (error) {
        report.errors++;
        samples.add(`${(error as Error)?.name}: ${(error as Error)?.message}`);
      } finally {
        report.latencies.push(performance.now() - releasedAt);
        await cache.close();
        await redis.close();
        report.writes += redis.writes;
        report.stats = report.stats === undefined ? cache.stats() : addStats(report.stats, cache.stats());
      }
    }),
  );
  report.errorSamples = [...samples];
  report.originCalls = originCalls;
  await control.send(["RPUSH", barrier.result, JSON.stringify(report)]);
  await control.close();
}

runWorker(main);
