/**
 * What a Sentinel failover costs a client under load: a real group (1 master,
 * 2 replicas, 3 sentinels, down-after 1000 ms, failover-timeout 3000 ms), one
 * `connectSentinel` client, 4 loops (2 writing, 2 reading) sending without
 * pause, and `SENTINEL FAILOVER` `--runs` times. For each failover it reports:
 *
 * - errors: commands that failed (in flight on the old master at the switch);
 * - window: from the first failed command to the first command answered by
 *   the new master (the time during which calls fail or wait);
 * - slowest: the longest any one command took across the switch (queued ones
 *   wait for the new master instead of failing);
 * - follow: from `SENTINEL FAILOVER` being sent to the client's `failover` event.
 *
 *   node --import tsx bench/sentinel_failover.ts [--runs=10]
 */
import process from "node:process";
import { connectSentinel } from "../resp/mod.ts";
import { startSentinelGroup } from "../test/support/redis_sentinel.ts";

const runs = Number(process.argv.find((a) => a.startsWith("--runs="))?.slice(7) ?? 10);
const group = await startSentinelGroup();
const client = await connectSentinel({ sentinels: group.sentinelUrls, name: group.name });
const rows: { errors: number; windowMs: number; slowestMs: number; followMs: number }[] = [];

try {
  for (let run = 0; run < runs; run++) {
    let stop = false;
    let errors = 0;
    let firstError = 0;
    let firstAfter = 0;
    let slowest = 0;
    let switched = false;
    const stopListening = client.onEvent((e) => {
      if (e.type === "failover") switched = true;
    });
    const loop = async (write: boolean, key: string) => {
      for (let i = 0; !stop; i++) {
        const began = performance.now();
        try {
          await client.send(write ? ["SET", key, i] : ["GET", key]);
          const now = performance.now();
          slowest = Math.max(slowest, now - began);
          if (switched && firstAfter === 0) firstAfter = now;
        } catch {
          errors++;
          if (firstError === 0) firstError = performance.now();
          await new Promise((r) => setImmediate(r));
        }
      }
    };
    const loops = [loop(true, "a"), loop(true, "b"), loop(false, "a"), loop(false, "b")];
    await new Promise((r) => setTimeout(r, 300));
    slowest = 0;
    const sent = performance.now();
    let followed = 0;
    const event = new Promise<void>((resolve) => {
      const stopEvent = client.onEvent((e) => {
        if (e.type !== "failover") return;
        followed = performance.now();
        stopEvent();
        resolve();
      });
    });
    const { from, to } = await group.failover();
    await event;
    while (firstAfter === 0) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 300));
    stop = true;
    await Promise.all(loops);
    stopListening();
    rows.push({
      errors,
      windowMs: errors === 0 ? 0 : firstAfter - firstError,
      slowestMs: slowest,
      followMs: followed - sent,
    });
    console.log(`run ${run + 1}: ${JSON.stringify(rows.at(-1), (_, v) => typeof v === "number" ? Math.round(v) : v)}`);
    await group.demote(from, to);
    await group.waitSettled({ replicas: 2 });
  }
} finally {
  await client.close();
  await group.stop();
}

const stat = (name: keyof (typeof rows)[number]) => {
  const sorted = rows.map((r) => r[name]).sort((a, b) => a - b);
  return `${name}: p50 ${Math.round(sorted[Math.floor((sorted.length - 1) / 2)]!)}, max ${Math.round(sorted.at(-1)!)}`;
};
console.log([stat("errors"), stat("windowMs"), stat("slowestMs"), stat("followMs")].join("; "));
