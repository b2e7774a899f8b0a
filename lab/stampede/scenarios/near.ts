/**
 * Scenario 7: hot keys rewritten by a writer while 4 OS processes read them,
 * first with remote reads (`coalesce(), lease()`), then through a near tier
 * (`near(), coalesce(), lease()`), all on RESP3 clients. What a near tier buys
 * is reads without a round trip; what it costs is the one-hop window: between
 * Redis applying a write and the invalidation push reaching a reader, that
 * reader's near hits still return the old value.
 *
 * Counted exactly, on one monotonic clock shared by every process on the
 * machine (`process.hrtime.bigint()`): a read is stale when it returned a
 * version older than one whose `set()` the writer had seen acknowledged
 * before the read started (report/stale_reads.ts). Remote reads can never be stale by
 * that definition (their GET reaches Redis after the write did), so a stale
 * remote read fails the lab; near reads can, and the table says how many and
 * how late. The coherence lag is, per write and reader process, the time
 * from the acknowledgement to the end of that process's first read of the new
 * version (or a newer one): it includes the re-read, so both rows are
 * measured the same way.
 *
 * Processes are released together by a Redis barrier (BLPOP / one RPUSH), as
 * in the cold burst; rows run one after the other with the same processes.
 *
 * @module
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { connect } from "../../../resp/mod.ts";
import { checkRow } from "../rows/checks.ts";
import { dismiss, endWorkers, pop, startWorkers } from "../workers/children.ts";
import { combine } from "../workers/combine.ts";
import { type NearCommand, nearKeys, type ReaderReport, type WriterReport } from "../workers/near_protocol.ts";
import { account, quantile, type Read, type Write } from "../report/stale_reads.ts";
import type { LabContext, RowResult, Scenario, ScenarioResult } from "../types.ts";

/** The longest a shared read of Redis lives: the readers' commandTimeoutMs (the default), in ns. */
const READ_LIFE_NS = 1000 * 1e6;

const WORKER = fileURLToPath(new URL("../workers/near_worker.ts", import.meta.url));
const READERS = 4;
const ROWS = [
  { set: "coalesce, lease", strategies: "coalesce, lease", withNear: false },
  { set: "+ near", strategies: "near, coalesce, lease", withNear: true },
] as const;

function readsOf(file: string): Read[] {
  const bytes = readFileSync(file);
  const log = new Float64Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 8);
  const reads: Read[] = [];
  for (let i = 0; i + 3 < log.length; i += 4) {
    reads.push({ key: log[i]!, version: log[i + 1]!, startNs: log[i + 2]!, endNs: log[i + 3]! });
  }
  return reads;
}

export const nearCache: Scenario = {
  id: "near-cache",
  title: "hot keys rewritten while 4 processes read them (near cache)",
  // Five worker processes starting under tsx: about 9 s of a quick lab meant to run in under a minute.
  fullOnly: true,
  async run(ctx: LabContext): Promise<ScenarioResult> {
    const quick = ctx.quick;
    const keys = 8;
    const durationMs = quick ? 1000 : 4000;
    const tailMs = 100;
    const writeEveryMs = 5;
    const loops = 16;
    const pauseMs = 1;
    const bucketMs = quick ? 50 : 100;
    const label = "near cache";
    const control = await connect({ url: ctx.url });
    const dir = mkdtempSync(join(tmpdir(), "herdless-lab-near-"));
    // Worker 0 writes, workers 1..4 read.
    const names = Array.from({ length: READERS + 1 }, (_, i) => (i === 0 ? "writer-0" : `reader-${i}`));
    const workers = startWorkers(
      label,
      WORKER,
      names.length,
      (i) => [ctx.url, String(i), i === 0 ? "writer" : "reader"],
    );
    const rows: RowResult[] = [];
    const problems: string[] = [];
    const at = (set: string) => `${this.title} / ${set}`;
    try {
      ctx.progress(`${this.title}: starting ${READERS} reader processes and a writer`);
      for (const _ of names) await workers.race(pop(control, "lab-near:hello", 30, `${label}: a worker's hello`));
      for (const [index, row] of ROWS.entries()) {
        const namespace = `lab-near-r${index}`;
        const k = nearKeys(namespace);
        const base = process.hrtime.bigint();
        const cmd: NearCommand = {
          row: index,
          withNear: row.withNear,
          namespace,
          keys,
          durationMs,
          tailMs,
          writeEveryMs,
          loops,
          pauseMs,
          base: String(base),
          dir,
        };
        ctx.progress(`${this.title}: ${row.set}, warming ${keys} keys`);
        // The writer publishes version 0 of every key before any reader reads one.
        await control.send(["RPUSH", `lab-near:cmd:${names[0]}`, JSON.stringify(cmd)]);
        await workers.race(pop(control, k.ready, 20, `${label}: the writer's ready`));
        for (const name of names.slice(1)) await control.send(["RPUSH", `lab-near:cmd:${name}`, JSON.stringify(cmd)]);
        for (const _ of names.slice(1)) await workers.race(pop(control, k.ready, 20, `${label}: a reader's ready`));
        const goNs = Number(process.hrtime.bigint() - base);
        // One RPUSH of one token per worker: every blocked BLPOP is served by this single command.
        await control.send(["RPUSH", k.go, ...names]);
        const t0 = performance.now();
        const ticker = setInterval(() => {
          const s = ((performance.now() - t0) / 1000).toFixed(1);
          ctx.progress(`${this.title}: ${row.set}, ${s} of ${durationMs / 1000} s, 1 writer and ${READERS} readers`);
        }, 200);
        let writer: WriterReport | undefined;
        const readers: ReaderReport[] = [];
        try {
          for (const _ of names) {
            const report = JSON.parse(
              await workers.race(pop(control, k.result, 20 + durationMs / 1000, `${label}: a worker's report`)),
            ) as WriterReport | ReaderReport;
            if ("writes" in report) writer = report;
            else readers.push(report);
          }
        } finally {
          clearInterval(ticker);
        }
        ctx.progress(`${this.title}: ${row.set}, counting stale reads`);
        if (writer === undefined) throw new Error(`${label}: no report from the writer`);
        const writes: Write[] = writer.writes.map(([key, version, sentNs, ackNs]) => ({
          key,
          version,
          sentNs,
          ackNs,
        }));
        const logs = readers.map((r) => readsOf(join(dir, `reader-${r.id}.bin`)));
        const a = account(writes, logs);
        const series = new Array<number>(Math.ceil(durationMs / bucketMs)).fill(0);
        for (const t of a.staleAtNs) {
          series[Math.min(series.length - 1, Math.max(0, Math.floor((t - goNs) / 1e6 / bucketMs)))]!++;
        }
        const callers = combine(
          readers.map((r, i) => ({ ...r, latencies: logs[i]!.map((x) => (x.endNs - x.startNs) / 1e6) })),
        );
        const stats = callers.stats;
        const sum = (f: (r: ReaderReport) => number) => readers.reduce((n, r) => n + f(r), 0);
        const lagMs = a.lagNs.map((x) => x / 1e6);
        const result: RowResult = {
          set: row.set,
          strategies: row.strategies,
          requests: sum((r) => r.reads + r.errors + r.timeouts),
          originCalls: sum((r) => r.loads),
          originErrors: 0,
          // Per process (each has its own origin client): the most in any one of them.
          peakConcurrent: Math.max(...readers.map((r) => r.peak)),
          ...callers,
          series,
          errorSamples: [...new Set([...callers.errorSamples, ...writer.errors])],
          coherence: {
            writes: writes.length,
            staleReads: a.stale,
            staleAfterAck: {
              p50: quantile(a.staleAfterAckNs, 0.5) / 1e6,
              p99: quantile(a.staleAfterAckNs, 0.99) / 1e6,
              max: quantile(a.staleAfterAckNs, 1) / 1e6,
            },
            readerLoopDelay: {
              p99: Math.max(...readers.map((r) => r.loopDelay.p99)),
              max: Math.max(...readers.map((r) => r.loopDelay.max)),
            },
            nearHits: stats.nearHits,
            nearHitRatio: a.reads === 0 ? 0 : stats.nearHits / a.reads,
            lag: { p50: quantile(lagMs, 0.5), p99: quantile(lagMs, 0.99), max: quantile(lagMs, 1) },
            unseen: a.unseen,
          },
        };
        rows.push(result);
        problems.push(...checkRow(this.title, result, 0, result.requests));
        if (writes.length === 0) problems.push(`${at(row.set)}: the writer acknowledged no write`);
        if (writer.errors.length > 0) problems.push(`${at(row.set)}: ${writer.errors.length} writes failed`);
        // A remote get may join the read of its key already in flight in its
        // process (one read for a burst of gets), whose GET reached Redis
        // before a write acknowledged meanwhile: stale by at most that read's
        // life, which commandTimeoutMs (1,000 ms, the readers' default) bounds.
        if (!row.withNear) {
          const late = a.staleAfterAckNs.filter((ns) => ns > READ_LIFE_NS).length;
          if (late > 0) {
            problems.push(
              `${at(row.set)}: ${late} remote reads returned a version replaced longer than a read lives (1,000 ms) ` +
                `before they began`,
            );
          }
        }
        if (!row.withNear && stats.nearHits > 0) problems.push(`${at(row.set)}: near hits without near()`);
        if (stats.nearHits > a.reads) problems.push(`${at(row.set)}: ${stats.nearHits} near hits for ${a.reads} reads`);
        await control.send(["DEL", k.ready, k.go, k.result, ...Array.from({ length: keys }, (_, i) => k.db(i))]);
      }
      await dismiss(workers, control, names.map((name) => `lab-near:cmd:${name}`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await endWorkers(workers, control, ["lab-near:hello", ...names.map((n) => `lab-near:cmd:${n}`)]);
    }
    return {
      id: this.id,
      title: this.title,
      setup:
        `${keys} hot keys; 1 writer process rewrites them round-robin with set() (pausing ${writeEveryMs} ms between writes) while ${READERS} reader processes x ${loops} loops (pausing ${pauseMs} ms between reads) read them for ${
          durationMs / 1000
        } s, remote (coalesce, lease), then with near() in front; RESP3 clients; stale reads counted exactly on one monotonic clock`,
      origin: "origin: a Redis key per hot key that the writer updates before each set(), read on a miss",
      bucketMs,
      durationMs,
      marks: [],
      rows,
      problems,
      seriesLabel: "stale reads",
    };
  },
};
