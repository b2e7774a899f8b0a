/**
 * Incremental RESP2/RESP3 decoder. Bytes go in with `feed()` in chunks of any
 * size, split anywhere; complete replies come out through handlers,
 * synchronously. Aggregates are kept on an explicit stack (no recursion), so
 * nesting depth is a setting, not the size of the call stack. The parsing
 * itself is in `frames.ts`; this file is the public face: options,
 * modes, and a stream that stays failed after its first error.
 *
 * @module
 */
import type { Reply, ReplyMap } from "../types.ts";
import { asBuffer } from "./scalars.ts";
import { FrameParser } from "./frames.ts";
import { intInRange, optionsObject, positiveInt } from "../shared/mod.ts";

/**
 * Receives what the {@linkcode Decoder} decodes, synchronously from `feed`.
 *
 * @example Settle pending commands in order, route pushes elsewhere
 * ```ts
 * import { Decoder, type DecoderHandlers } from "@herdless/herdless/resp";
 * const pending: ((value: unknown) => void)[] = [];
 * const handlers: DecoderHandlers = {
 *   reply: (value) => pending.shift()?.(value),
 *   push: (value) => console.log("push", value),
 * };
 * pending.push((value) => console.log("PING ->", value));
 * new Decoder(handlers).feed(new TextEncoder().encode("+PONG\r\n"));
 * ```
 */
export interface DecoderHandlers {
  /**
   * A complete top-level reply (never a push). An error reply arrives here
   * as a `RedisReplyError` value; the caller decides to reject with it.
   *
   * @param value the reply.
   * @param attribute the RESP3 attribute (`|`) that preceded it, if any.
   */
  reply(value: Reply, attribute: ReplyMap | undefined): void;
  /**
   * A top-level RESP3 push (`>`). It never takes a command's reply slot.
   *
   * @param value the push frame's elements, its kind first (e.g. `"message"`).
   */
  push(value: Reply[]): void;
  /**
   * Optional: the header of a payload of at least 1 MiB (a bulk, verbatim
   * or streamed string part, a blob error) of a reply arrived, its bytes
   * not yet: what a caller that times the reply needs to know, since such a
   * reply takes long to arrive. Called once per such payload, before its
   * bytes; never for a push's payloads, nor for one whole in the chunk that
   * announced it.
   *
   * @param length the payload's declared length, in bytes.
   */
  announced?(length: number): void;
}

/**
 * Limits of the {@linkcode Decoder}; each is checked before anything is
 * allocated, and breaking one is a `ProtocolError`. Within the limits,
 * memory follows the bytes that have arrived, never a declared length.
 *
 * @example Tighter limits for an untrusted server
 * ```ts
 * import { Decoder } from "@herdless/herdless/resp";
 * const decoder = new Decoder(
 *   { reply: console.log, push: console.log },
 *   { maxBulkBytes: 1 << 20, maxAggregateLength: 100_000, maxDepth: 64 },
 * );
 * decoder.feed(new TextEncoder().encode(":1\r\n"));
 * ```
 */
export interface DecoderOptions {
  /**
   * Largest bulk string, verbatim string, blob error or streamed string
   * accepted, in bytes (Redis' `proto-max-bulk-len`). A longer declared
   * length is refused on its digits. An accepted one is not allocated up
   * front: a payload cut across chunks holds at most
   * max(64 KiB, 2 x its bytes received so far) until it is whole.
   * Simple strings and simple errors are payloads too (Redis sends them of
   * any length, e.g. a Lua `redis.status_reply()`): they may hold this many
   * bytes, and never fewer than 65,535, refused at the first byte beyond.
   * Header and number lines (lengths, integers, doubles, big numbers) are
   * capped at 64 KiB whatever this is.
   * @default {536870912}
   */
  maxBulkBytes?: number;
  /**
   * Largest element count of one aggregate (pairs for maps). Elements are
   * pushed as they arrive, never preallocated from the declared count.
   * @default {4294967295}
   */
  maxAggregateLength?: number;
  /**
   * Deepest nesting of aggregates accepted. The decoder is iterative, so a
   * high value costs memory, not stack.
   * @default {10000}
   */
  maxDepth?: number;
}

const WHERE = "create Decoder";

/**
 * A limit as the parser compares it: a safe integer, so a length header
 * checked digit by digit against it can never grow into an unbounded line.
 */
function limit(name: string, value: unknown): number {
  return intInRange(WHERE, name, value, 0, Number.MAX_SAFE_INTEGER);
}

/**
 * Incremental RESP2/RESP3 decoder.
 *
 * Every malformed input is a {@linkcode ProtocolError} whose `offset` is the
 * offending byte counted from the start of the stream, the same however the
 * stream was split; after one, `feed` throws that error again forever (the
 * stream position is lost, the connection must be closed). An exception
 * thrown by a handler propagates out of `feed` and stops the decoder the
 * same way.
 *
 * Numbers: an integer (`:`) is a `number` up to 2^53 - 1 in magnitude and
 * an exact `bigint` up to the int64 limits; beyond them it is a
 * `ProtocolError` at its first digit, as RESP calls such a line invalid
 * (Redis sends larger values as big numbers, `(`, always a `bigint`). A
 * double (`,`) is read with its exponent, and `inf`, `-inf`, `nan` in any
 * case, with a sign or a `nan(...)` payload, as servers before Redis 7.2
 * print them; a malformed one (`,1e`, `,.`, `,3.14x`) is a `ProtocolError`
 * at its first bad byte.
 *
 * @example Decode replies split across chunks
 * ```ts
 * import { Decoder } from "@herdless/herdless/resp";
 * const decoder = new Decoder({
 *   reply: (value) => console.log("reply", value),
 *   push: (value) => console.log("push", value),
 * });
 * decoder.feed(new TextEncoder().encode("+OK\r\n$5\r\nhel"));
 * decoder.feed(new TextEncoder().encode("lo\r\n>2\r\n$7\r\nmessage\r\n:1\r\n"));
 * // reply OK, reply hello, push [ "message", 1 ]
 * ```
 *
 * @example Doubles as older servers spell them; an integer beyond int64 is refused
 * ```ts
 * import { Decoder, isProtocolError } from "@herdless/herdless/resp";
 * const decoder = new Decoder({ reply: (value) => console.log(value), push: () => {} });
 * decoder.feed(new TextEncoder().encode(",INF\r\n,-inf\r\n,nan(0x7ff)\r\n:9223372036854775807\r\n"));
 * // Infinity, -Infinity, NaN, 9223372036854775807n
 * try {
 *   decoder.feed(new TextEncoder().encode(":9223372036854775808\r\n"));
 * } catch (e) {
 *   console.log(isProtocolError(e)); // true
 * }
 * ```
 */
export class Decoder {
  /**
   * Mode of the next top-level reply: when true every bulk string in that
   * reply's tree is a `Uint8Array` (a copy, never a view of the fed chunk).
   * Read once when a top-level frame starts, so a `reply` handler may set it
   * for the reply that follows.
   */
  buffers = false;
  /** The same as {@linkcode Decoder.buffers}, for top-level pushes (`>`), which belong to no command. */
  pushBuffers = false;

  readonly #parser: FrameParser;
  #failed: unknown = undefined;
  #feeding = false;

  /**
   * A decoder at the start of a stream.
   *
   * @param handlers Receive replies and pushes.
   * @param options Limits on sizes and depth.
   * @throws {RangeError} When a limit is not an integer in range.
   * @throws {TypeError} When `options` is not an object.
   */
  constructor(handlers: DecoderHandlers, options: DecoderOptions = {}) {
    const o = optionsObject<DecoderOptions>(WHERE, options);
    this.#parser = new FrameParser(handlers, this, {
      maxBulkBytes: limit("maxBulkBytes", o.maxBulkBytes ?? 536870912),
      maxAggregateLength: limit("maxAggregateLength", o.maxAggregateLength ?? 4294967295),
      maxDepth: positiveInt(WHERE, "maxDepth", o.maxDepth ?? 10000),
    });
  }

  /**
   * Feeds the next bytes of the stream and calls the handlers for every frame
   * they complete. No view of `chunk` is kept: it may be reused afterwards.
   *
   * @param chunk The next bytes, of any length.
   * @throws {ProtocolError} When the stream is not valid RESP or breaks a limit.
   */
  feed(chunk: Uint8Array): void {
    if (this.#failed !== undefined) throw this.#failed;
    if (this.#feeding) throw new Error("Cannot feed Decoder: feed() was called again from inside a handler");
    this.#feeding = true;
    try {
      this.#parser.feed(asBuffer(chunk));
    } catch (e) {
      this.#failed = e;
      throw e;
    } finally {
      this.#feeding = false;
    }
  }
}
