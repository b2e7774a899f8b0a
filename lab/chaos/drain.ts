/**
 * How fast this machine drains the "1 MB value" fault's load, without the
 * cache: one connection per chaos worker each send `bigBurst` concurrent
 * `GET`s of a 1 MB value every 1000 ms, 3 times, as the fault did at full
 * size. `run.ts` measures it through the fault proxy before every run and
 * sizes the fault to a stated fraction of it ({@linkcode burstFor}), so the
 * fault asks of the connection what the machine can give, idle or loaded;
 * a backlog the machine cannot drain is a verdict on the machine, not on the
 * code. Run alone, it prints the rate straight to Redis and through the proxy.
 *
 * `node --import tsx lab/chaos/drain.ts`
 *
 * @module
 */
import process from "node:process";
import { setTimeout as sleep } from "node:timers/promises";
import { connect } from "../../mod.ts";
import { startRedis } from "../../test/support/redis-server.ts";
import { settings } from "./config.ts";
import { startFaultProxy } from "./proxy.ts";

/** A drain measurement: MB/s over the whole run, and how long each burst took. */
export interface Drain {
  readonly mbPerSecond: number;
  readonly burstsMs: readonly number[];
}

/**
 * Measure the drain rate of `url`, whose server already holds a 1 MB value
 * at `key`: `rounds` rounds of bursts on `connections` connections.
 */
export async function measureDrain(
  url: string,
  key: string,
  rounds = 3,
  connections = settings.workers,
): Promise<Drain> {
  const clients = await Promise.all(Array.from({ length: connections }, () => connect({ url, resp: 3 })));
  try {
    const started = performance.now();
    const bursts: Promise<number>[] = [];
    for (let round = 0; round < rounds; round++) {
      for (const client of clients) {
        const sent = performance.now();
        const gets = Array.from({ length: settings.bigBurst }, () => client.send(["GET", key]));
        bursts.push(Promise.all(gets).then(() => performance.now() - sent));
      }
      if (round < rounds - 1) await sleep(1000);
    }
    const burstsMs = await Promise.all(bursts);
    const mb = (rounds * connections * settings.bigBurst * settings.bigBytes) / (1024 * 1024);
    return { mbPerSecond: mb / ((performance.now() - started) / 1000), burstsMs };
  } finally {
    for (const client of clients) client.destroy();
  }
}

/**
 * The 1 MB fault's burst (reads of the 1 MB value per worker per second)
 * that asks `settings.drainShare` of a measured drain rate: at least 1, at
 * most `settings.bigBurst`.
 */
export function burstFor(mbPerSecond: number, workers: number): number {
  const perWorker = (mbPerSecond * settings.drainShare) / workers / (settings.bigBytes / (1024 * 1024));
  return Math.max(1, Math.min(settings.bigBurst, Math.floor(perWorker)));
}

if (process.argv[1]?.endsWith("drain.ts")) {
  const server = await startRedis();
  const proxy = await startFaultProxy(server.port);
  try {
    const admin = await connect(server.url);
    await admin.send(["SET", settings.bigKey, "x".repeat(settings.bigBytes)]);
    admin.destroy();
    for (const [label, url] of [["direct", server.url], ["fault proxy", proxy.url]] as const) {
      const d = await measureDrain(url, settings.bigKey);
      console.log(
        `${label}: ${Math.round(d.mbPerSecond)} MB/s; each burst took ${d.burstsMs.map(Math.round).join(", ")} ms; ` +
          `the fault would read ${burstFor(d.mbPerSecond, settings.workers)} x 1 MB per worker per second`,
      );
    }
  } finally {
    await proxy.close();
    await server.stop();
  }
  process.exit(0);
}
