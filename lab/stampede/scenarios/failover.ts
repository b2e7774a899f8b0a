/**
 * A Sentinel failover under load: the test harness's group (1 master, 2
 * replicas, 3 sentinels, down-after 1000 ms), 2 `connectSentinel` clients
 * with a `pipeline(..., coalesce(), lease())` each, 2 loops per client
 * reading 4 hot keys (short TTL, so keys expire and reload across the
 * switch) from a counting origin whose every call returns the next version
 * of its key, and `SENTINEL FAILOVER` mid-run. It shows what the callers
 * see: errors by class and their window, origin calls before and after, the
 * client's `failover` event, and values older than one already served (a
 * lease or a value the old master had not replicated can be lost: a reload,
 * never an older value). Full-only: starting 6 servers is too slow for CI.
 *
 * @module
 */
import { type CacheStats, coalesce, connectSentinel, lease, pipeline, type SentinelClient } from "../../../mod.ts";
import { startSentinelGroup } from "../../shared/servers.ts";
import { addStats, checkRow } from "../rows/checks.ts";
import type { LabContext, RowResult, Scenario, ScenarioResult } from "../types.ts";
import { count as n, ms } from "../../shared/format.ts";

const CLIENTS = 2;
const LOOPS_PER_CLIENT = 2;
const KEYS = 4;
const TTL_MS = 500;
const ORIGIN_MS = 20;
const WARM_MS = 1500;
const AFTER_EVENT_MS = 2000;
const BUCKET_MS = 100;
const TIMEOUT_MS = 2000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function quantile(sorted: readonly number[], q: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

export const failover: Scenario = {
  id: "failover",
  title: "Sentinel failover under load",
  fullOnly: true,
  async run(ctx: LabContext): Promise<ScenarioResult> {
    ctx.progress("failover: starting 3 data nodes and 3 sentinels");
    const group = await startSentinelGroup({ name: "lab-failover" });
    const clients: SentinelClient[] = [];
    try {
      for (let i = 0; i < CLIENTS; i++) {
        clients.push(await connectSentinel({ sentinels: group.sentinelUrls, name: group.name, resp: 3 }));
      }
      const caches = clients.map((redis) =>
        pipeline<{ version: number }>({ redis, ttlMs: TTL_MS, namespace: "lab:failover" }, coalesce(), lease())
      );
      const t0 = performance.now();
      const at = () => performance.now() - t0;
      // The origin: counts calls (and when), every call hands out the key's next version.
      const versions = new Map<string, number>();
      const calls: number[] = [];
      let inFlight = 0;
      let peak = 0;
      const load = (key: string) => async () => {
        calls.push(at());
        peak = Math.max(peak, ++inFlight);
        await sleep(ORIGIN_MS);
        inFlight--;
        const version = (versions.get(key) ?? 0) + 1;
        versions.set(key, version);
        return { version };
      };

      let eventAt: number | undefined;
      let eventText = "";
      for (const c of clients) {
        c.onEvent((e) => {
          if (e.type !== "failover" || eventAt !== undefined) return;
          eventAt = at();
          eventText = `${e.from} -> ${e.to}`;
        });
      }

      // Per key, the newest version any caller has been answered with.
      const served = new Map<string, number>();
      const latencies: number[] = [];
      const errors = new Map<string, number>();
      const errorTimes: number[] = [];
      const samples = new Map<string, string>();
      let gets = 0;
      let older = 0;
      let olderAfterEvent = 0;
      let stop = false;
      const loop = async (cache: (typeof caches)[number], seed: number) => {
        for (let i = seed; !stop; i++) {
          const key = `hot${i % KEYS}`;
          const floor = served.get(key) ?? 0;
          const began = at();
          const afterEvent = eventAt !== undefined;
          gets++;
          try {
            const value = await cache.get(["k", key], load(key), { timeoutMs: TIMEOUT_MS });
            if (value.version < floor) {
              older++;
              if (afterEvent) olderAfterEvent++;
            }
            served.set(key, Math.max(served.get(key) ?? 0, value.version));
          } catch (error) {
            const kind = error instanceof Error ? error.name : typeof error;
            errors.set(kind, (errors.get(kind) ?? 0) + 1);
            if (!samples.has(kind)) samples.set(kind, `${kind}: ${error instanceof Error ? error.message : error}`);
            errorTimes.push(at());
          }
          latencies.push(at() - began);
          // A short pause: a steady load, not a busy loop on a shared machine.
          await sleep(2);
        }
      };
      const loops = caches.flatMap((cache, c) =>
        Array.from({ length: LOOPS_PER_CLIENT }, (_, l) => loop(cache, c * LOOPS_PER_CLIENT + l))
      );

      ctx.progress("failover: warm load");
      await sleep(WARM_MS);
      const failoverAt = at();
      ctx.progress("failover: SENTINEL FAILOVER");
      const { from, to } = await group.failover();
      const promotedAt = at();
      const deadline = performance.now() + 15_000;
      while (eventAt === undefined && performance.now() < deadline) await sleep(20);
      await sleep(AFTER_EVENT_MS);
      stop = true;
      await Promise.all(loops);
      const durationMs = at();

      const stats = caches.map((c) => c.stats()).reduce((a: CacheStats, b) => addStats(a, b));
      await Promise.all(caches.map((c) => c.close()));
      const sorted = [...latencies].sort((a, b) => a - b);
      const series = Array.from({ length: Math.ceil(durationMs / BUCKET_MS) }, () => 0);
      for (const t of calls) series[Math.min(series.length - 1, Math.floor(t / BUCKET_MS))]!++;
      const errorCount = errorTimes.length;
      const row: RowResult = {
        set: "coalesce + lease",
        strategies: "coalesce, lease",
        requests: gets,
        originCalls: calls.length,
        originErrors: 0,
        peakConcurrent: peak,
        latency: { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted.at(-1) ?? 0 },
        stale: 0,
        errors: errorCount,
        timeouts: errors.get("TimeoutError") ?? 0,
        dropped: 0,
        series,
        stats,
        errorSamples: [...samples.values()],
        older,
      };
      const problems = checkRow("failover", row, 0, latencies.length);
      const window = errorCount === 0
        ? "none"
        : `${ms(errorTimes[0]! - failoverAt)} to ${ms(errorTimes.at(-1)! - failoverAt)} ms (${
          ms(errorTimes.at(-1)! - errorTimes[0]!)
        } ms)`;
      const before = calls.filter((t) => t < failoverAt).length;
      const byClass = [...errors].map(([k, v]) => `${k} ${n(v)}`).join(", ") || "0";
      return {
        id: this.id,
        title: this.title,
        setup: `a Sentinel group (1 master, 2 replicas, 3 sentinels, down-after ${group.downAfterMs} ms), ${CLIENTS} ` +
          `connectSentinel clients (RESP3) x ${LOOPS_PER_CLIENT} loops reading ${KEYS} hot keys (TTL ${TTL_MS} ms, ` +
          `timeout ${TIMEOUT_MS} ms, 2 ms pause between gets) through coalesce() + lease(), SENTINEL FAILOVER at ` +
          `${ms(failoverAt)} ms (${from.port} -> ${to.port}, sentinels agreed at ${ms(promotedAt)} ms), run on ` +
          `${AFTER_EVENT_MS / 1000} s after the client's failover event`,
        origin: `counting origin: ${ORIGIN_MS} ms, in-process, each call returns the key's next version`,
        bucketMs: BUCKET_MS,
        durationMs,
        marks: [
          { atMs: failoverAt, label: "SENTINEL FAILOVER" },
          ...(eventAt === undefined ? [] : [{ atMs: eventAt, label: "failover event" }]),
        ],
        rows: [row],
        problems,
        table: {
          columns: ["reading", "value"],
          cells: [
            ["gets", n(gets)],
            ["errors (by class)", `${n(errorCount)} (${byClass})`],
            ["error window (first to last error, from SENTINEL FAILOVER)", window],
            ["origin calls before / after SENTINEL FAILOVER", `${n(before)} / ${n(calls.length - before)}`],
            ["latency p50 / p99 / max ms", `${ms(row.latency.p50)} / ${ms(row.latency.p99)} / ${ms(row.latency.max)}`],
            [
              "client's failover event",
              eventAt === undefined
                ? "not fired"
                : `fired at ${ms(eventAt)} ms, ${ms(eventAt - failoverAt)} ms after SENTINEL FAILOVER (${eventText})`,
            ],
            [
              "values older than one already served (all / reads begun after the event)",
              `${n(older)} / ${n(olderAfterEvent)}`,
            ],
          ],
        },
        reading: "How to read it: gets in flight on the old master when the client switches fail (ConnectionError) " +
          "and are not retried; the window is when that happened. Origin calls after the failover are the TTL's " +
          "reloads plus any lease or value the new master never received (asynchronous replication): an extra " +
          "load, never an older value for a read begun after the event (the last column should be 0).",
      };
    } finally {
      await Promise.allSettled(clients.map((c) => c.close()));
      await group.stop();
    }
  },
};
