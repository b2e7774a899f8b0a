/**
 * The fake origin the workers load from. Every call is counted exactly in a
 * separate redis-server (never faulted): one HINCRBY gives the value its
 * version, the per-key count of origin calls, and one RPUSH logs the call's
 * key and time for the per-TTL-window count. Versions therefore only grow,
 * whatever happens to the cache server, and a worker that is served a lower
 * version than it has already seen has caught a value going backwards.
 *
 * @module
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { RedisLike } from "../../mod.ts";
import { settings } from "./config.ts";

/** The hash, on the counter server, of origin calls per key. */
export const CALLS_KEY = "chaos:calls";
/** The list, on the counter server, of `<key> <Date.now()>` per origin call. */
export const LOG_KEY = "chaos:log";

/** A cached value: its key, its version, and filler. */
export interface Value {
  k: string;
  v: number;
  /** Which worker's origin call made it (or the workerd client's), and when (epoch ms): said when a value goes backwards. */
  w: number | "workerd";
  at: number;
  pad: string;
}

const pads = new Map<number, string>();
function pad(bytes: number): string {
  let p = pads.get(bytes);
  if (p === undefined) pads.set(bytes, p = "x".repeat(bytes));
  return p;
}

/** A loader for `key` that counts the call on `counter`, waits like a database, and returns the next version. */
export function originLoader(counter: RedisLike, key: string, worker: number): () => Promise<Value> {
  const bytes = key === settings.bigKey
    ? settings.bigBytes
    : key === settings.hugeKey
    ? settings.hugeBytes
    : settings.valueBytes;
  return async function origin(): Promise<Value> {
    const at = Date.now();
    // Issued in one tick, so they leave in one write.
    const [v] = await Promise.all([
      counter.send(["HINCRBY", CALLS_KEY, key, 1]),
      counter.send(["RPUSH", LOG_KEY, `${key} ${at}`]),
    ]);
    await sleep(settings.originMs);
    return { k: key, v: Number(v), w: worker, at, pad: pad(bytes) };
  };
}
