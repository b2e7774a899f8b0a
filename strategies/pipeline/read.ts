/**
 * The read phase: the data key fetched in one round trip (GET and PTTL,
 * after an optional extra command such as the lease's `SET NX`) and decoded
 * into an {@linkcode Entry}. Freshness comes from the server's PTTL alone,
 * never from a local clock.
 *
 * @module
 */
import { NEVER } from "../../resp/_abort.ts";
import { isRedisReplyError } from "../../resp/errors.ts";
import type { Arg, RedisLike, Reply } from "../../resp/types.ts";
import type { ResolvedCodec } from "../codec.ts";
import type { CacheEvent, Entry, Keys, ReadResult } from "../types.ts";
import { decodeEnvelope } from "./envelope.ts";

/** What the reader needs of its cache. */
export interface ReaderContext {
  readonly redis: RedisLike;
  readonly codec: ResolvedCodec;
  readonly commandTimeoutMs: number;
  emit(event: CacheEvent): void;
}

/** Reads and decodes the entries of one cache. */
export class Reader {
  readonly #c: ReaderContext;

  constructor(context: ReaderContext) {
    this.#c = context;
  }

  /**
   * GET and PTTL of the data key, issued in the same tick so they leave in
   * one write (one round trip), after `extra` when given.
   */
  async read(keys: Keys, signal: AbortSignal | undefined, extra?: readonly Arg[]): Promise<ReadResult> {
    const c = this.#c;
    const options = { timeoutMs: c.commandTimeoutMs, signal: signal === NEVER ? undefined : signal };
    const first = extra === undefined ? undefined : c.redis.send(extra, options);
    // Bytes only for a binary codec: text codecs take the client's string,
    // decoded once in the client, and the envelope header is read from it.
    const getOptions = c.codec.binary ? { ...options, buffers: true } : options;
    const value = c.redis.send(["GET", keys.data], getOptions);
    const pttl = c.redis.send(["PTTL", keys.data], options);
    try {
      const [x, raw, ttl] = await Promise.all([first, value, pttl]);
      return { extra: x, entry: this.#decode(keys.data, raw, ttl) };
    } catch (error) {
      // A key of another type (another writer's list or hash) is a foreign
      // value like any other: a miss, which the next fill's SET overwrites.
      // Handled here rather than by a .catch() on every GET: hits pay nothing.
      if (!isRedisReplyError(error) || error.code !== "WRONGTYPE") throw error;
      c.emit({ type: "decode-error", key: keys.data, error });
      return { extra: await first, entry: undefined };
    }
  }

  #decode(key: string, raw: Reply, pttl: Reply): Entry | undefined {
    // -2: the key vanished between GET and PTTL (expired or deleted): a miss.
    if (raw === null || raw === undefined || pttl === -2) return undefined;
    try {
      if (typeof raw !== "string" && !(raw instanceof Uint8Array)) {
        throw new Error(`expected a string value, got ${Array.isArray(raw) ? "an array" : typeof raw}`);
      }
      // Our client's bytes are a fresh copy of the value alone, kept as is. An
      // adapter's may be a view of a larger buffer (ioredis slices its socket
      // chunk): copied once, so a value the caller keeps never pins that.
      const own = typeof raw === "string" || raw.byteLength === raw.buffer.byteLength ? raw : raw.slice();
      const envelope = decodeEnvelope(own);
      const value = envelope.negative ? undefined : this.#c.codec.decode(envelope.payload);
      const physical = typeof pttl === "number" && pttl >= 0 ? pttl : Infinity;
      return {
        value,
        negative: envelope.negative,
        pttl: physical,
        freshMs: physical - envelope.staleMs - envelope.ifErrorMs,
        staleMs: envelope.staleMs,
        ifErrorMs: envelope.ifErrorMs,
        loadMs: envelope.loadMs,
      };
    } catch (error) {
      // Another writer's value, an older format or corruption: a miss that
      // the next fill overwrites.
      this.#c.emit({ type: "decode-error", key, error });
      return undefined;
    }
  }
}

/**
 * Whether a re-read entry may stand in for a load: fresh, and newer than the
 * entry the read phase saw.
 */
export function accepts(entry: Entry | undefined, seen: Entry | undefined): entry is Entry {
  if (entry === undefined || entry.freshMs <= 0) return false;
  // A key's PTTL only falls while it holds one value: a larger one means a
  // new publication since `seen` (an early refresh must not take the very
  // entry it is refreshing for a fresh one).
  return seen === undefined || seen.freshMs <= 0 || entry.pttl > seen.pttl;
}
