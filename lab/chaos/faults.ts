/**
 * The fault schedule. Each fault lasts `faultMs` (its `run` returns when it
 * is over and healed) and may return a note for the table's legend. The two
 * load faults (the 1 MB and the 64 MB values) ask what the run's
 * {@linkcode LoadPlan} allows, and last until what they asked has arrived.
 * Server faults act on the cache server; network faults act in the proxy the
 * workers connect through. The counter server is never touched.
 *
 * @module
 */
import { setTimeout as sleep } from "node:timers/promises";
import { pipeline, type RedisClient } from "../../mod.ts";
import type { RedisServer } from "../../test/support/redis_server.ts";
import { settings } from "./config.ts";
import { RAW_BIG_KEY } from "./drain_probe.ts";
import { bigDemand, describeRun, hugeDemand, type LoadPlan, type LoadRun, loadRun, rate } from "./load.ts";
import { info, workerClients } from "./probe.ts";
import type { Workers } from "./workers.ts";
import type { ChaosSentinel } from "./sentinel.ts";
import type { FaultProxy } from "./proxy.ts";

/** What a fault may act on. */
export interface FaultContext {
  /** The cache server. */
  server: RedisServer;
  /** A connection straight to the cache server (not through the proxy). */
  admin: RedisClient;
  proxy: FaultProxy;
  workers: Pick<Workers, "broadcast" | "ask">;
  workerCount: number;
  /** The load faults' size, from the drain measured at the start. */
  plan: LoadPlan;
  /** Where a load fault records what it moved, for the verdict. */
  loads: LoadRun[];
  /** The sentinel worker's group, started only when the Sentinel failover is scheduled. */
  sentinel: ChaosSentinel | undefined;
  /** The run's t0 (epoch ms): notes give times as ms since it, as the workers' notes do. */
  t0: number;
}

export interface Fault {
  name: string;
  /** Run only when `--only` or the profile names it (not part of the default schedule). */
  extra?: boolean;
  run(ctx: FaultContext): Promise<string | undefined>;
}

/** Call `fn` at once and every `everyMs` until `faultMs` is up, then wait out the rest. */
async function repeatFor(faultMs: number, everyMs: number, fn: () => Promise<void> | void): Promise<void> {
  const end = Date.now() + faultMs;
  while (Date.now() < end) {
    const next = Date.now() + everyMs;
    await fn();
    await sleep(Math.max(0, Math.min(next, end) - Date.now()));
  }
}

/** Wait until every worker's load requests have settled (at most the hang bound) and record what they moved. */
async function settleLoad(name: string, ctx: FaultContext): Promise<LoadRun> {
  const answers = await ctx.workers.ask("settle", "load", settings.hangMs + 5000);
  const run = loadRun(name, ctx.workerCount, answers);
  ctx.loads.push(run);
  return run;
}

const BIG = "1 MB value burst";
/** The one fault that acts on the sentinel worker's group, not on the cache server or the proxy. */
export const SENTINEL_FAILOVER = "Sentinel failover";
const HUGE = `64 MB value, lease ${settings.hugeLeaseMs} ms`;

/** The schedule, each fault lasting `faultMs`. */
export function buildFaults(faultMs: number): Fault[] {
  const seconds = faultMs / 1000;
  const repeat = (everyMs: number, fn: () => Promise<void> | void) => repeatFor(faultMs, everyMs, fn);
  const sleepOut = () => sleep(faultMs);
  return [
    {
      name: "CLIENT KILL",
      async run({ admin }) {
        let byType = 0;
        let byId = 0;
        const flags = new Set<string>();
        await repeat(500, async () => {
          for (const c of await workerClients(admin)) flags.add(c.flags);
          // What an operator would type first; the rest are killed one by one, so every worker loses its connection.
          byType += Number(await admin.send(["CLIENT", "KILL", "TYPE", "normal"]));
          for (const c of await workerClients(admin)) byId += Number(await admin.send(["CLIENT", "KILL", "ID", c.id]));
        });
        return `every 500 ms: CLIENT KILL TYPE normal closed ${byType} connections, then CLIENT KILL ID ${byId} worker connections it skipped (worker connection flags seen: ${
          [...flags].join(", ")
        })`;
      },
    },
    {
      name: `SIGSTOP ${seconds} s`,
      async run({ server }) {
        server.signal("SIGSTOP");
        await sleepOut();
        server.signal("SIGCONT");
        return undefined;
      },
    },
    {
      name: "SIGKILL + restart",
      async run({ server }) {
        const started = Date.now();
        await server.kill();
        await sleep(Math.max(0, faultMs - (Date.now() - started)));
        await server.restart();
        return `down ${seconds} s, restarted empty on the same port`;
      },
    },
    {
      name: "SCRIPT FLUSH",
      async run({ admin }) {
        await repeat(300, async () => void await admin.send(["SCRIPT", "FLUSH"]));
        return "every 300 ms";
      },
    },
    {
      name: "FLUSHALL",
      async run({ admin }) {
        await repeat(faultMs / 2, async () => void await admin.send(["FLUSHALL"]));
        return `twice, ${faultMs / 2} ms apart`;
      },
    },
    {
      name: "maxmemory allkeys-lru",
      async run({ admin }) {
        // INFO's used_memory_dataset is mostly allocator overhead at this size: estimate the keys' own memory.
        const keys = Number(await admin.send(["DBSIZE"]));
        let sampled = 0;
        for (let i = 0; i < 20; i++) {
          const key = await admin.send(["RANDOMKEY"]);
          if (typeof key === "string") sampled += Number(await admin.send(["MEMORY", "USAGE", key]) ?? 0);
        }
        const data = Math.round((sampled / 20) * keys);
        const used = await info(admin, "memory", "used_memory");
        const limit = used - Math.floor(data / 2);
        await admin.send(["CONFIG", "SET", "maxmemory-policy", "allkeys-lru", "maxmemory", limit]);
        await sleepOut();
        await admin.send(["CONFIG", "SET", "maxmemory", 0, "maxmemory-policy", "noeviction"]);
        return `maxmemory ${kb(limit)}: used ${kb(used)}, of which ${keys} keys about ${
          kb(data)
        }, so about half the keys must go`;
      },
    },
    {
      // The eviction storm (the eviction-storm profile's only fault): below the
      // server's own baseline, so it evicts what it can and refuses writes.
      name: "maxmemory 1mb allkeys-lru",
      extra: true,
      async run({ admin }) {
        await admin.send(["CONFIG", "SET", "maxmemory-policy", "allkeys-lru", "maxmemory", "1mb"]);
        await sleepOut();
        await admin.send(["CONFIG", "SET", "maxmemory", 0, "maxmemory-policy", "noeviction"]);
        return `maxmemory 1 MB under allkeys-lru for ${faultMs / 1000} s (below the server's baseline)`;
      },
    },
    {
      name: "maxmemory noeviction (OOM)",
      async run({ admin }) {
        // A full Redis that has evicted the cache's keys: reads work, every write is refused with OOM.
        await admin.send(["FLUSHALL"]);
        await admin.send(["CONFIG", "SET", "maxmemory-policy", "noeviction", "maxmemory", 1]);
        await sleepOut();
        await admin.send(["CONFIG", "SET", "maxmemory", 0]);
        return "FLUSHALL (the keys evicted), then maxmemory 1 byte: every write refused";
      },
    },
    {
      name: `DEBUG SLEEP ${seconds}`,
      async run({ admin }) {
        await admin.send(["DEBUG", "SLEEP", seconds]);
        return undefined;
      },
    },
    {
      name: "proxy: drop connections",
      async run({ proxy }) {
        let dropped = 0;
        await repeat(1000, () => {
          dropped += proxy.connections;
          proxy.drop();
        });
        return `every 1000 ms, ${dropped} connections cut`;
      },
    },
    {
      name: "proxy: +200 ms RTT",
      async run({ proxy }) {
        proxy.delay(100);
        await sleepOut();
        proxy.delay(0);
        return "100 ms each way";
      },
    },
    {
      name: `proxy: ${seconds} s stall`,
      async run({ proxy }) {
        proxy.stall();
        await sleepOut();
        proxy.resume();
        return "both directions held, then delivered in order";
      },
    },
    {
      name: BIG,
      async run(ctx) {
        const { admin, plan, workers, workerCount } = ctx;
        // A skipped fault still takes its time, so that its row's rates compare with the others'.
        if (!plan.bigFits) {
          await sleepOut();
          return `not run: ${unfit(plan, bigDemand(plan, workerCount) * (plan.bigEveryMs / 1000))}`;
        }
        // Earlier faults flushed or restarted the server: the raw value is written again, past the proxy.
        await admin.send(["SET", RAW_BIG_KEY, "x".repeat(settings.bigBytes)]);
        await repeat(plan.bigEveryMs, () => workers.broadcast(`burst ${plan.bigGets}`));
        const run = await settleLoad(BIG, ctx);
        return `every ${plan.bigEveryMs} ms each worker gets the ${
          mb(settings.bigBytes)
        } value once through its cache and ${plan.bigGets} times raw at once (${
          rate(bigDemand(plan, workerCount))
        } in all, ${pct(bigDemand(plan, workerCount) / plan.drainBytesPerSec)} of the drain); as run: ${
          describeRun(run)
        }`;
      },
    },
    {
      name: HUGE,
      async run(ctx) {
        const { admin, plan, workers } = ctx;
        if (!plan.hugeFits) {
          await sleepOut();
          return `not run: ${unfit(plan, settings.hugeBytes)}`;
        }
        await repeat(plan.hugeEveryMs, () => workers.broadcast("huge"));
        const run = await settleLoad(HUGE, ctx);
        // Where the value ended up, whatever worker 0 was told: keys() is pure, this cache sends nothing.
        const probe = pipeline({ redis: admin, ttlMs: 1, namespace: "chaos-huge", wakeups: "poll" });
        const stored = Number(await admin.send(["STRLEN", probe.keys(["chaos", settings.hugeKey]).data]));
        await probe.close();
        return `every ${plan.hugeEveryMs} ms worker 0 gets a ${
          mb(settings.hugeBytes)
        } value (its own cache, lease ${settings.hugeLeaseMs} ms; ${rate(hugeDemand(plan))}, ${
          pct(hugeDemand(plan) / plan.drainBytesPerSec)
        } of the drain); ${
          stored > 0 ? `stored in Redis afterwards (${mb(stored)})` : "not stored in Redis afterwards"
        }; as run: ${describeRun(run)}`;
      },
    },
    {
      // Not a fixed length: it is over when every sentinel names the new master, and that master says so.
      name: SENTINEL_FAILOVER,
      async run({ sentinel, t0 }) {
        if (sentinel === undefined) throw new Error("no Sentinel group was started");
        const { group } = sentinel;
        const started = Date.now();
        const old = await group.master();
        // When a replica first says master: from then on, what the old master still accepts is lost.
        let promoted: string | undefined;
        let done = false;
        const watch = (async () => {
          while (!done && promoted === undefined) {
            for (const node of group.nodes) {
              if (node.port === old.port || promoted !== undefined) continue;
              if ((await sentinel.role(node.port).catch(() => "")) === "master") promoted = `t0+${Date.now() - t0} ms`;
            }
            await sleep(50);
          }
        })();
        const { from, to } = await group.failover().finally(() => done = true);
        await watch;
        const agreed = Date.now();
        // Before the sentinels demote the old master (and it resyncs): what it holds that the new one does not.
        const oldRole = await sentinel.role(from.port);
        const lost = await sentinel.lostKeys(from.port, to.port);
        const shown = lost.slice(0, 5).map((l) => `${l.key} ${l.from} vs ${l.to ?? "none"}`).join(", ");
        return `SENTINEL FAILOVER ${group.name} sent at t0+${started - t0} ms, answered OK; ${to.port} said master at ${
          promoted ?? "(not seen before the sentinels agreed)"
        }; every sentinel named it at t0+${agreed - t0} ms (${from.port} before); then the old master (${oldRole}) ` +
          `would serve a newer version than the new master for ${lost.length} of the sentinel worker's keys${
            lost.length > 0 ? ` (${shown}${lost.length > 5 ? ", …" : ""})` : ""
          }`;
      },
    },
  ];
}

/** Why a load fault was skipped: one round of it would outlast the fault at the drain's share. */
function unfit(plan: LoadPlan, roundBytes: number): string {
  return `one round (${mb(roundBytes)}) needs ${
    Math.round(roundBytes / (plan.drainBytesPerSec * plan.fraction) * 100) / 100
  } s at ${pct(plan.fraction)} of the measured drain (${rate(plan.drainBytesPerSec)}), more than the fault lasts`;
}

function pct(share: number): string {
  return `${Math.round(share * 100)}%`;
}

function kb(bytes: number): string {
  return `${Math.round(bytes / 1024)} KB`;
}

function mb(bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024)} MB`;
}
