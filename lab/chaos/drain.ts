/**
 * How fast this machine drains the "1 MB value x64" fault's load, without
 * the cache: 4 connections (one per chaos worker) each send 64 concurrent
 * `GET`s of a 1 MB value every 1000 ms, 3 times, as the fault does; first
 * straight to a disposable redis-server, then through the chaos run's fault
 * proxy. Prints, for each, when all 768 MB had arrived and how long each
 * burst took. A burst slower than the 1000 ms between bursts means the
 * fault's replies pile up on the connection, and every other command on it
 * waits behind them (what the chaos run's recovery column then shows).
 *
 * `node --import tsx lab/chaos/drain.ts`
 *
 * @module
 */
import process from "node:process";
import { setTimeout as sleep } from "node:timers/promises";
import { connect } from "../../mod.ts";
import { startRedis } from "../../test/support/redis_server.ts";
import { settings } from "./config.ts";
import { startFaultProxy } from "./proxy.ts";

const ROUNDS = 3;
const server = await startRedis();
const proxy = await startFaultProxy(server.port);
try {
  const admin = await connect(server.url);
  await admin.send(["SET", settings.bigKey, "x".repeat(settings.bigBytes)]);
  admin.destroy();
  const total = (ROUNDS * settings.workers * settings.bigBurst * settings.bigBytes) / (1024 * 1024);
  for (const [label, url] of [["direct", server.url], ["fault proxy", proxy.url]] as const) {
    const clients = await Promise.all(Array.from({ length: settings.workers }, () => connect({ url, resp: 3 })));
    const started = performance.now();
    const bursts: Promise<number>[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const client of clients) {
        const sent = performance.now();
        const gets = Array.from({ length: settings.bigBurst }, () => client.send(["GET", settings.bigKey]));
        bursts.push(Promise.all(gets).then(() => performance.now() - sent));
      }
      if (round < ROUNDS - 1) await sleep(1000);
    }
    const took = await Promise.all(bursts);
    const ms = performance.now() - started;
    console.log(
      `${label}: ${total} MB drained after ${Math.round(ms)} ms (${Math.round(total / (ms / 1000))} MB/s); ` +
        `each burst took ${took.map((t) => Math.round(t)).join(", ")} ms`,
    );
    for (const client of clients) client.destroy();
  }
} finally {
  await proxy.close();
  await server.stop();
}
process.exit(0);
