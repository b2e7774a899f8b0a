/**
 * Memory of a near tier, in one process run with `--expose-gc`: RSS after
 * GC and Redis' `tracking_total_keys` (`INFO stats`) at each step of
 *
 * 1. before filling: the cache built, its connection open, the data in
 *    Redis (written by another connection of the same process) but nothing
 *    read yet;
 * 2. N near entries of 120-byte values (set A, read once each);
 * 3. set B read through the same tier, whose `maxEntries` is N, so A is
 *    evicted from memory (B was written with a short TTL);
 * 4. set A invalidated by the other connection;
 * 5. set B expired (once its TTL passed, a SCAN pass makes Redis delete the
 *    expired keys it meets, as active expiry would over time);
 * 6. the cache closed.
 *
 * In default tracking mode Redis forgets a tracked key only when it is
 * invalidated (written, deleted, expired, evicted): steps 3-5 show whether
 * keys the near tier dropped stay in the server's table.
 *
 * The node-redis 5 `clientSideCache` row does the same for scale.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { connect } from "../resp/mod.ts";
import { CACHE_TTL_MS, cacheValue, CL, herdlessPipeline } from "./caches.ts";

export type MemoryVariant = "herdless" | "node-redis-csc";
export const MEMORY_VARIANTS: readonly MemoryVariant[] = [
  "herdless",
  "node-redis-csc",
];
export const MEMORY_LABELS: Record<MemoryVariant, string> = {
  herdless: "herdless `near({ maxEntries: N }), coalesce(), lease()`",
  "node-redis-csc": "node-redis 5 `clientSideCache: { maxEntries: N }`",
};

/** What the memory worker is asked to do. */
export interface MemoryTask {
  kind: "memory";
  variant: MemoryVariant;
  url: string;
  entries: number;
}

/** One step's figures. */
export interface MemoryStep {
  step: string;
  rssBytes: number;
  heapUsedBytes: number;
  nearEntries: number | undefined;
  trackingKeys: number | undefined;
  ms: number;
}

export interface MemoryResult {
  variant: MemoryVariant;
  entries: number;
  steps: MemoryStep[];
  error?: string;
}

/** B's TTL: long enough to read N entries, short enough to wait for. */
const SHORT_TTL_MS = 8_000;
const AT_ONCE = 100;

function rss(): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(
      readFileSync("/proc/self/status", "utf8"),
    );
    if (m) return Number(m[1]) * 1024;
  } catch {
    // Not Linux.
  }
  return process.memoryUsage().rss;
}

const gc = (globalThis as { gc?: () => void }).gc;

async function settle(): Promise<void> {
  // Let pushes and timers land, then collect twice (the second pass frees what finalizers released).
  await new Promise((r) => setTimeout(r, 200));
  gc?.();
  await new Promise((r) => setImmediate(r));
  gc?.();
}

/** `op(i)` for every i < n, `AT_ONCE` in flight. */
async function each(
  n: number,
  op: (i: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < n) await op(next++);
  };
  await Promise.all(Array.from({ length: AT_ONCE }, lane));
}

export async function memoryWorker(task: MemoryTask): Promise<MemoryResult> {
  if (gc === undefined) throw new Error("the memory worker needs --expose-gc");
  const n = task.entries;
  const steps: MemoryStep[] = [];
  const started = performance.now();
  const admin = await connect({ url: task.url });
  const trackingKeys = async () => {
    const info = String(await admin.send(["INFO", "stats"]));
    const m = /tracking_total_keys:(\d+)/.exec(info);
    return m ? Number(m[1]) : undefined;
  };
  const values = (set: string) => (i: number) => ({
    id: `${set}:${i}`,
    value: cacheValue(i),
  });
  const a = values("a");
  const b = values("b");

  // The variant's three verbs: write (another connection), read (through the near tier), drop (another connection).
  let write: (id: string, value: unknown, ttlMs: number) => Promise<unknown>;
  let read: (id: string) => Promise<unknown>;
  let drop: (id: string) => Promise<unknown>;
  let nearEntries: () => number | undefined;
  let closeReader: () => Promise<unknown>;
  let closeWriter: () => Promise<unknown>;
  let loads = 0;

  if (task.variant === "herdless") {
    const writerConn = await connect({ url: task.url, resp: 3 });
    const writer = herdlessPipeline(writerConn, "bench:memory", CL, {
      wakeups: "poll",
    });
    const readerConn = await connect({ url: task.url, resp: 3 });
    const reader = herdlessPipeline(readerConn, "bench:memory", [["near", {
      maxEntries: n,
    }], ...CL]);
    const loader = () => {
      loads++;
      return cacheValue(-1);
    };
    write = (id, value, ttlMs) => writer.set(id, value, { ttlMs });
    read = (id) => reader.get(id, loader);
    drop = (id) => writer.invalidate(id);
    nearEntries = () => reader.stats().nearEntries;
    closeReader = async () => {
      await reader.close();
      await readerConn.close();
    };
    closeWriter = async () => {
      await writer.close();
      await writerConn.close();
    };
  } else {
    const { createClient } = await import("redis");
    const writer = createClient({ url: task.url });
    await writer.connect();
    const reader = createClient({
      url: task.url,
      RESP: 3,
      clientSideCache: {
        ttl: 0,
        maxEntries: n,
        evictPolicy: "FIFO",
        recordStats: false,
      },
    });
    await reader.connect();
    const key = (id: string) => `bench:memory:csc:${id}`;
    write = (id, value, ttlMs) => writer.set(key(id), JSON.stringify(value), { PX: ttlMs });
    read = async (id) => {
      const raw = await reader.get(key(id));
      if (raw === null) {
        loads++;
        return cacheValue(-1);
      }
      return JSON.parse(raw);
    };
    drop = (id) => writer.del(key(id));
    nearEntries = () => reader.clientSideCache?.size();
    closeReader = () => reader.quit();
    closeWriter = () => writer.quit();
  }

  const record = async (
    step: string,
    near: () => number | undefined = nearEntries,
  ) => {
    await settle();
    steps.push({
      step,
      rssBytes: rss(),
      heapUsedBytes: process.memoryUsage().heapUsed,
      nearEntries: near(),
      trackingKeys: await trackingKeys(),
      ms: Math.round(performance.now() - started),
    });
  };

  try {
    await each(n, (i) => write(a(i).id, a(i).value, CACHE_TTL_MS));
    await record("before filling (data in Redis, nothing read)");
    await each(n, (i) => read(a(i).id));
    await record(`${n.toLocaleString("en-US")} entries read (set A)`);
    // Set B with a short TTL, read through the same bounded tier: A leaves memory.
    await each(n, (i) => write(b(i).id, b(i).value, SHORT_TTL_MS));
    const bWritten = performance.now();
    await each(n, (i) => read(b(i).id));
    await record(
      `set B read: A evicted from the tier (maxEntries ${n.toLocaleString("en-US")})`,
    );
    await each(n, (i) => drop(a(i).id));
    await record("set A invalidated by another connection");
    const wait = SHORT_TTL_MS + 200 - (performance.now() - bWritten);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    let cursor = "0";
    do {
      const [nextCursor] = (await admin.send(["SCAN", cursor, "COUNT", 1000])) as [
        string,
        string[],
      ];
      cursor = nextCursor;
    } while (cursor !== "0");
    await record("set B expired");
    await closeReader();
    await record("reader closed", () => undefined);
    if (loads > 0) {
      throw new Error(
        `the loader ran ${loads} times: a read missed data that was in Redis`,
      );
    }
    return { variant: task.variant, entries: n, steps };
  } finally {
    await closeWriter();
    await admin.close();
  }
}
