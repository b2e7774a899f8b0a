/**
 * The fault schedule. Each fault lasts `settings.faultMs` (its `run` returns
 * when it is over and healed) and may return a note for the table's legend.
 * Server faults act on the cache server; network faults act in the proxy the
 * workers connect through. The counter server is never touched.
 *
 * @module
 */
import { setTimeout as sleep } from "node:timers/promises";
import { pipeline, type RedisClient } from "../../mod.ts";
import type { RedisServer } from "../../test/support/redis-server.ts";
import { settings } from "./config.ts";
import { info, workerClients } from "./probe.ts";
import type { FaultProxy } from "./proxy.ts";

/** What a fault may act on. */
export interface FaultContext {
  /** The cache server. */
  server: RedisServer;
  /** A connection straight to the cache server (not through the proxy). */
  admin: RedisClient;
  proxy: FaultProxy;
  /** Send a command line to every worker. */
  broadcast(line: string): void;
  /** Reads of the 1 MB value per worker per second, sized to the measured drain rate (`drain.ts`). */
  bigBurst: number;
  /** The drain rate measured before the run, MB/s through the proxy. */
  drainMbPerSecond: number;
  /** How many worker processes run. */
  workers: number;
}

export interface Fault {
  name: string;
  /** Run only when `--only` or the profile names it (not part of the default schedule). */
  extra?: boolean;
  run(ctx: FaultContext): Promise<string | undefined>;
}

/** Call `fn` at once and every `everyMs` until the fault's time is up, then wait out the rest. */
async function repeat(everyMs: number, fn: () => Promise<void> | void): Promise<void> {
  const end = Date.now() + settings.faultMs;
  while (Date.now() < end) {
    const next = Date.now() + everyMs;
    await fn();
    await sleep(Math.max(0, Math.min(next, end) - Date.now()));
  }
}

const seconds = settings.faultMs / 1000;

export const faults: Fault[] = [
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
      await sleep(settings.faultMs);
      server.signal("SIGCONT");
      return undefined;
    },
  },
  {
    name: "SIGKILL + restart",
    async run({ server }) {
      const started = Date.now();
      await server.kill();
      await sleep(Math.max(0, settings.faultMs - (Date.now() - started)));
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
      await repeat(settings.faultMs / 2, async () => void await admin.send(["FLUSHALL"]));
      return `twice, ${settings.faultMs / 2} ms apart`;
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
      await sleep(settings.faultMs);
      await admin.send(["CONFIG", "SET", "maxmemory", 0, "maxmemory-policy", "noeviction"]);
      return `maxmemory ${kb(limit)}: used ${kb(used)}, of which ${keys} keys about ${
        kb(data)
      }, so about half the keys must go`;
    },
  },
  {
    // Issue 24's storm (the eviction-storm profile's only fault): below the
    // server's own baseline, so it evicts what it can and refuses writes.
    name: "maxmemory 1mb allkeys-lru",
    extra: true,
    async run({ admin }) {
      await admin.send(["CONFIG", "SET", "maxmemory-policy", "allkeys-lru", "maxmemory", "1mb"]);
      await sleep(settings.faultMs);
      await admin.send(["CONFIG", "SET", "maxmemory", 0, "maxmemory-policy", "noeviction"]);
      return `maxmemory 1 MB under allkeys-lru for ${settings.faultMs / 1000} s (below the server's baseline)`;
    },
  },
  {
    name: "maxmemory noeviction (OOM)",
    async run({ admin }) {
      // A full Redis that has evicted the cache's keys: reads work, every write is refused with OOM.
      await admin.send(["FLUSHALL"]);
      await admin.send(["CONFIG", "SET", "maxmemory-policy", "noeviction", "maxmemory", 1]);
      await sleep(settings.faultMs);
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
      await sleep(settings.faultMs);
      proxy.delay(0);
      return "100 ms each way";
    },
  },
  {
    name: `proxy: ${seconds} s stall`,
    async run({ proxy }) {
      proxy.stall();
      await sleep(settings.faultMs);
      proxy.resume();
      return "both directions held, then delivered in order";
    },
  },
  {
    name: "1 MB value burst",
    async run({ broadcast, bigBurst, drainMbPerSecond, workers }) {
      await repeat(1000, () => broadcast(`burst ${bigBurst}`));
      const asked = (bigBurst * workers * settings.bigBytes) / (1024 * 1024);
      return `every 1000 ms each worker reads a ${
        mb(settings.bigBytes)
      } value ${bigBurst} times at once with raw GETs ` +
        `on its cache connection (${asked} MB/s in all, ${Math.round((asked / drainMbPerSecond) * 100)}% of the ` +
        `${Math.round(drainMbPerSecond)} MB/s this machine drained through the proxy before the run)`;
    },
  },
  {
    name: "64 MB value, lease 500 ms",
    async run({ admin, broadcast }) {
      await repeat(1000, () => broadcast("huge"));
      // Where the value ended up, whatever worker 0 was told: keys() is pure, this cache sends nothing.
      const probe = pipeline({ redis: admin, ttlMs: 1, namespace: "chaos-huge", wakeups: "poll" });
      const stored = Number(await admin.send(["STRLEN", probe.keys(["chaos", settings.hugeKey]).data]));
      await probe.close();
      return `every 1000 ms worker 0 gets a ${
        mb(settings.hugeBytes)
      } value (its own cache, lease ${settings.hugeLeaseMs} ms); ${
        stored > 0 ? `stored in Redis afterwards (${mb(stored)})` : "not stored in Redis afterwards"
      }`;
    },
  },
];

function kb(bytes: number): string {
  return `${Math.round(bytes / 1024)} KB`;
}

function mb(bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024)} MB`;
}
