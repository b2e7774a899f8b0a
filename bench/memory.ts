/**
 * Memory of a near tier, in one process run with `--expose-gc`: RSS after
 * GC and Redis' `tracking_total_keys` (`INFO stats`) at each step of
 *
 * 1. before filling: the cache built, its connection open, the data in
 *    Redis (written by the parent before this process started) but nothing
 *    read yet;
 * 2. N near entries of 120-byte values (set A, read once each);
 * 3. set B read through the same tier, whose `maxEntries` is N, so A is
 *    evicted from memory (B was written with a short TTL);
 * 4. set B expired (once its TTL passed, a SCAN pass makes Redis delete the
 *    expired keys it meets, as active expiry would over time);
 * 5. set A invalidated by another connection (opened only then);
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
import { CACHE_TTL_MS, herdlessPipeline } from "./caches.ts";
import { cacheValue } from "./item.ts";
import { CL } from "./layers.ts";

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
  /** When set B expires (`Date.now()` time): the parent wrote A and B before starting this process. */
  bExpiresAt: number;
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

/** B's TTL: long enough for the worker to start and read 2n entries on a busy machine (10k/s), short enough to wait for. */
const shortTtlMs = (n: number) => 5_000 + Math.ceil(n / 5);
const AT_ONCE = 100;
const NAMESPACE = "bench:memory";
const cscKey = (id: string) => `bench:memory:csc:${id}`;
const ids = (set: "a" | "b") => (i: number) => `${set}:${i}`;

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

/**
 * Write sets A and B for `variant`, from the parent process, so the measured
 * process' "before" RSS holds none of the writing's garbage. Returns when B
 * expires (`Date.now()` time).
 */
export async function populateMemory(
  url: string,
  variant: MemoryVariant,
  n: number,
): Promise<number> {
  const redis = await connect({ url, resp: 3 });
  try {
    const ttl = shortTtlMs(n);
    if (variant === "herdless") {
      const writer = herdlessPipeline(redis, NAMESPACE, CL, {
        wakeups: "poll",
      });
      await each(
        n,
        (i) => writer.set(ids("a")(i), cacheValue(i), { ttlMs: CACHE_TTL_MS }),
      );
      await each(
        n,
        (i) => writer.set(ids("b")(i), cacheValue(i), { ttlMs: ttl }),
      );
      await writer.close();
      // Measured after the last write, so every key of B has expired by then.
      return Date.now() + ttl;
    }
    // node-redis' clientSideCache reads plain JSON strings: the same bytes its own SET would write.
    await each(
      n,
      (i) =>
        redis.send([
          "SET",
          cscKey(ids("a")(i)),
          JSON.stringify(cacheValue(i)),
          "PX",
          CACHE_TTL_MS,
        ]),
    );
    await each(
      n,
      (i) =>
        redis.send([
          "SET",
          cscKey(ids("b")(i)),
          JSON.stringify(cacheValue(i)),
          "PX",
          ttl,
        ]),
    );
    return Date.now() + ttl;
  } finally {
    await redis.close();
  }
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

  // Reads go through the near tier; invalidations come from another connection, opened only when needed.
  let read: (id: string) => Promise<unknown>;
  let drop: (id: string) => Promise<unknown>;
  let nearEntries: () => number | undefined;
  let closeReader: () => Promise<unknown>;
  let closeWriter: () => Promise<unknown> = async () => {};
  let loads = 0;
  const missing = () => {
    loads++;
    return cacheValue(-1);
  };

  if (task.variant === "herdless") {
    const readerConn = await connect({ url: task.url, resp: 3 });
    const reader = herdlessPipeline(readerConn, NAMESPACE, [["near", {
      maxEntries: n,
    }], ...CL]);
    read = (id) => reader.get(id, missing);
    nearEntries = () => reader.stats().nearEntries;
    closeReader = async () => {
      await reader.close();
      await readerConn.close();
    };
    let writer: ReturnType<typeof herdlessPipeline> | undefined;
    drop = async (id) => {
      if (writer === undefined) {
        const writerConn = await connect({ url: task.url, resp: 3 });
        writer = herdlessPipeline(writerConn, NAMESPACE, CL, {
          wakeups: "poll",
        });
        const w = writer;
        closeWriter = async () => {
          await w.close();
          await writerConn.close();
        };
      }
      return writer.invalidate(id);
    };
  } else {
    const { createClient } = await import("redis");
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
    read = async (id) => {
      const raw = await reader.get(cscKey(id));
      return raw === null ? missing() : JSON.parse(raw);
    };
    nearEntries = () => reader.clientSideCache?.size();
    closeReader = () => reader.quit();
    drop = (id) => admin.send(["DEL", cscKey(id)]);
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
    await record("before filling (data in Redis, nothing read)");
    await each(n, (i) => read(ids("a")(i)));
    await record(`${n.toLocaleString("en-US")} entries read (set A)`);
    await each(n, (i) => read(ids("b")(i)));
    await record(
      `set B read: A evicted from the tier (maxEntries ${n.toLocaleString("en-US")})`,
    );
    if (loads > 0) {
      // On a loaded machine B can expire before it is read: the steps so far
      // (the per-entry figure needs only the first two) still stand.
      const error = `the loader ran ${loads} times: a read missed data that was in Redis (B expired?)`;
      return { variant: task.variant, entries: n, steps, error };
    }
    const wait = task.bExpiresAt + 200 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    let cursor = "0";
    do {
      const [nextCursor] = (await admin.send(["SCAN", cursor, "COUNT", 1000])) as [
        string,
        string[],
      ];
      cursor = nextCursor;
    } while (cursor !== "0");
    await record("set B expired (A still in Redis, not held)");
    await each(n, (i) => drop(ids("a")(i)));
    await record("set A invalidated by another connection");
    await closeReader();
    await record("reader closed", () => undefined);
    return { variant: task.variant, entries: n, steps };
  } finally {
    await closeWriter();
    await admin.close();
  }
}
