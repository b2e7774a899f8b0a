/**
 * The two ends of the data key: reading it (GET and PTTL in one round trip,
 * decoded into an {@linkcode Entry}) and the innermost fill step (call the
 * origin, shape the write, encode, publish).
 *
 * @module
 */
import { isRedisReplyError } from "../resp/errors.ts";
import type { Arg, Reply } from "../resp/types.ts";
import { NEVER } from "./_call.ts";
import type { ResolvedCodec } from "./_codec.ts";
import { decodeEnvelope, encodeEnvelope } from "./_envelope.ts";
import { publishScript } from "./_scripts.ts";
import type {
  CacheContext,
  Entry,
  FillRequest,
  Keys,
  Loader,
  Outcome,
  ReadResult,
  Strategy,
  WritePlan,
} from "./_types.ts";

/** Reads and publishes entries for one cache. */
export class Publisher {
  readonly #c: CacheContext;
  readonly #codec: ResolvedCodec;
  readonly #negativeTtlMs: number;
  readonly #writers: readonly Strategy[];

  constructor(context: CacheContext, codec: ResolvedCodec, negativeTtlMs: number, writers: readonly Strategy[]) {
    this.#c = context;
    this.#codec = codec;
    this.#negativeTtlMs = negativeTtlMs;
    this.#writers = writers;
  }

  /**
   * GET and PTTL of the data key, issued in the same tick so they leave in
   * one write (one round trip), after `extra` when given. Freshness comes
   * from the server's PTTL alone, never from a local clock.
   */
  async read(keys: Keys, signal: AbortSignal | undefined, extra?: readonly Arg[]): Promise<ReadResult> {
    const c = this.#c;
    const options = { timeoutMs: c.commandTimeoutMs, signal: signal === NEVER ? undefined : signal };
    const first = extra === undefined ? undefined : c.redis.send(extra, options);
    // Bytes only for a binary codec: text codecs take the client's string,
    // decoded once in the client, and the envelope header is read from it.
    const getOptions = this.#codec.binary ? { ...options, buffers: true } : options;
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
      const value = envelope.negative ? undefined : this.#codec.decode(envelope.payload);
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

  /**
   * The innermost fill step: call the origin, then publish. With a lease
   * token the publish is the token-checked script; a rejection (the lease
   * expired or was invalidated) returns the value stored now, or ours if
   * nothing is.
   */
  async load(req: FillRequest, loader: Loader<unknown>): Promise<Outcome> {
    const c = this.#c;
    const key = req.keys.data;
    c.emit({ type: "load-start", key, background: req.background });
    const started = c.now();
    let value: unknown;
    let stored: { envelope: string | Uint8Array; px: number } | undefined;
    try {
      value = await loader({ signal: req.signal, identity: req.identity });
      const loadMs = Math.max(0, Math.ceil(c.now() - started));
      stored = this.#shape(key, value, req.ttlMs, loadMs);
    } catch (error) {
      c.emit({ type: "load-end", key, durationMs: Math.max(0, c.now() - started), error });
      throw error;
    }
    c.emit({ type: "load-end", key, durationMs: Math.max(0, c.now() - started) });
    if (stored === undefined) return { from: "origin", value, published: false };
    const options = { timeoutMs: c.commandTimeoutMs };
    if (req.token === undefined) {
      await c.redis.send(["SET", key, stored.envelope, "PX", stored.px], options);
      return { from: "origin", value, published: true };
    }
    if (await publishScript(c.redis, req.keys, req.token, stored.envelope, stored.px, c.channel, options)) {
      return { from: "origin", value, published: true };
    }
    c.emit({ type: "late-publish", key });
    const { entry } = await this.read(req.keys, undefined);
    return entry === undefined
      ? { from: "origin", value, published: false }
      : { from: "cache", value: entry.value, published: false };
  }

  // The write phase: windows from the write strategies, then the envelope.
  // Undefined when nothing is to be stored (a not-found with negativeTtlMs 0).
  #shape(key: string, value: unknown, ttlMs: number, loadMs: number) {
    const negative = value === undefined;
    if (negative && this.#negativeTtlMs === 0) return undefined;
    const plan: WritePlan = {
      negative,
      freshMs: negative ? this.#negativeTtlMs : ttlMs,
      staleMs: 0,
      ifErrorMs: 0,
      loadMs,
    };
    if (!negative) { for (const s of this.#writers) s.write!(plan); }
    const px = plan.freshMs + plan.staleMs + plan.ifErrorMs;
    if (!Number.isInteger(px) || px <= 0 || plan.freshMs <= 0) {
      throw new RangeError(
        `Cannot publish ${key}: the write phase produced a TTL of ${px} ms (fresh ${plan.freshMs} ms)`,
      );
    }
    let payload: string | Uint8Array;
    try {
      payload = negative ? "" : this.#codec.encode(value);
      return { envelope: encodeEnvelope(plan, payload), px };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new TypeError(
        `Cannot cache ${key}: the ${this.#codec.name} codec cannot encode the loaded value (${reason})`,
        {
          cause: error,
        },
      );
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
