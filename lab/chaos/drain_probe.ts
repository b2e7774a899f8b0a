/**
 * The drain rate as the chaos run measures it before its load faults: each
 * worker keeps a few raw `GET`s of the 1 MB value in flight on its own
 * connection, through the fault proxy, while its ordinary gets go on, and
 * counts the bytes that arrived. The parent sums the workers' counts.
 * (`drain.ts` replays the old fixed-size fault without the cache, to see
 * a backlog form.)
 *
 * @module
 */
import type { RedisLike } from "../../mod.ts";

/** The raw 1 MB key the probe and the 1 MB fault read (outside every cache namespace). */
export const RAW_BIG_KEY = "chaos-raw:big";

/** Length in bytes of a bulk reply, whichever form the client decoded it to; 0 for nil. */
export function replyBytes(reply: unknown): number {
  // The values the run stores are ASCII: a character is a byte.
  if (typeof reply === "string") return reply.length;
  if (reply instanceof Uint8Array) return reply.byteLength;
  return 0;
}

/** What one connection drained: bytes of replies that arrived, over how long. */
export interface Drained {
  bytes: number;
  ms: number;
}

/**
 * Keep `depth` `GET`s of `key` in flight (enough that the connection never idles, few enough that a slow machine
 * is not left a backlog) for `forMs`, then wait for the last; bytes over the whole time.
 */
export async function measureDrain(redis: RedisLike, key: string, forMs: number, depth = 2): Promise<Drained> {
  const started = performance.now();
  let bytes = 0;
  const lane = async () => {
    while (performance.now() - started < forMs) bytes += replyBytes(await redis.send(["GET", key]));
  };
  await Promise.all(Array.from({ length: depth }, lane));
  return { bytes, ms: performance.now() - started };
}
