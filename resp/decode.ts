/**
 * Incremental RESP2/RESP3 decoder. Bytes go in with `feed()` in chunks of any
 * size, split anywhere; complete replies come out through handlers,
 * synchronously. Aggregates are kept on an explicit stack (no recursion), so
 * nesting depth is a setting, not the size of the call stack.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { RedisReplyError } from "./errors.ts";
import type { Reply, ReplyMap } from "./types.ts";
import { asBuffer, copyBytes, latin1, parseDouble, utf8 } from "./_decode_scalars.ts";
import {
  CAN_STREAM,
  fail,
  findLineEnd,
  LEN_NULL,
  LINE_MAX,
  NULLABLE,
  parseBigNumber,
  parsed,
  readCrlf,
  readInteger,
  readLength,
} from "./_decode_lines.ts";
import { ARRAY, ATTRIBUTE, MAP, PUSH, ReplyTree, STREAMED } from "./_decode_tree.ts";

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
   * `attribute` is the RESP3 attribute (`|`) that preceded it, if any.
   */
  reply(value: Reply, attribute: ReplyMap | undefined): void;
  /** A top-level RESP3 push (`>`). It never takes a command's reply slot. */
  push(value: Reply[]): void;
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

const CR = 13;
const LF = 10;
const T_BULK = 36; // $
const T_ARRAY = 42; // *
const T_SIMPLE = 43; // +
const T_ERROR = 45; // -
const T_INTEGER = 58; // :
const T_NULL = 95; // _
const T_DOUBLE = 44; // ,
const T_BOOLEAN = 35; // #
const T_BIGNUM = 40; // (
const T_VERBATIM = 61; // =
const T_BLOBERR = 33; // !
const T_MAP = 37; // %
const T_SET = 126; // ~
const T_ATTR = 124; // |
const T_PUSH = 62; // >
const T_CHUNK = 59; // ; (streamed string part)
const T_END = 46; // . (streamed aggregate end)

/**
 * First allocation for a payload cut across chunks when its declared length
 * is larger: a header costs the server a dozen bytes, so what it declares
 * is never trusted with more memory than this before the bytes arrive.
 */
const BULK_FIRST = 64 * 1024;

function checkLimit(setting: string, value: number | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min) {
    throw new RangeError(`Cannot create Decoder: '${setting}' must be an integer >= ${min}, got ${value}`);
  }
  return value;
}

/**
 * A plain `Uint8Array` of `size` bytes with an `ArrayBuffer` of its own,
 * not zero-filled: a payload's buffer is written before any byte of it is
 * read or handed out. Zero-filling each buffer a payload outgrows made 1 MiB
 * payloads in 64 KiB chunks 1.6x slower in buffers mode (Node 20).
 */
function unfilledBytes(size: number): Uint8Array {
  const buf = Buffer.allocUnsafeSlow(size);
  return new Uint8Array(buf.buffer, buf.byteOffset, size);
}

/** Buffers-mode bytes of a payload the decoder allocated itself: a plain view, no second copy. */
function viewBytes(buf: Buffer, a: number, b: number): Uint8Array {
  return new Uint8Array(buf.buffer, buf.byteOffset + a, b - a);
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

  // `#private` state: measured no slower than plain properties in a hot
  // loop on Node 20, Bun 1.4 and Deno 2.9, and decode-micro gave the same
  // figures with either.
  /** Open aggregates and where finished values go. */
  #tree: ReplyTree;
  #maxBulk: number;
  /** Absolute stream offset of byte 0 of the buffer being parsed. */
  #base = 0;
  /** Buffers mode of the top-level frame being decoded. */
  #bin = false;
  /** A line token cut by the end of a chunk, kept until it is whole. */
  #line: Buffer = Buffer.allocUnsafe(64);
  #lineLen = 0;
  /** Absolute offset of `#line[0]`. */
  #lineStart = 0;
  /**
   * Payload of a length-prefixed token cut by the end of a chunk. Its
   * capacity starts at min(declared, max(64 KiB, bytes at hand)) and at
   * least doubles when outgrown, capped at the declared length, so it ends
   * exactly that long and the copies add up to O(length).
   */
  #bulk: Uint8Array | null = null;
  /** Declared payload length of `#bulk`'s token (its final capacity). */
  #bulkLen = 0;
  #bulkFill = 0;
  /** Type byte of `#bulk`'s token. */
  #bulkType = 0;
  /** Absolute offset of `#bulk`'s first payload byte. */
  #bulkAt = 0;
  /** How many of the CRLF bytes after `#bulk`'s payload were checked. */
  #bulkCrlf = 0;
  /** Parts of a streamed string (`$?`), joined once at its end. */
  #stream: Uint8Array[] | null = null;
  #streamLen = 0;
  #failed: unknown = undefined;
  #feeding = false;

  /**
   * @param handlers Receive replies and pushes.
   * @param options Limits on sizes and depth.
   * @throws {RangeError} When a limit is not an integer in range.
   */
  constructor(handlers: DecoderHandlers, options: DecoderOptions = {}) {
    this.#maxBulk = checkLimit("maxBulkBytes", options.maxBulkBytes, 536870912, 0);
    const maxLength = checkLimit("maxAggregateLength", options.maxAggregateLength, 4294967295, 0);
    const maxDepth = checkLimit("maxDepth", options.maxDepth, 10000, 1);
    this.#tree = new ReplyTree(handlers, maxLength, maxDepth);
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
    const buf = asBuffer(chunk);
    const end = buf.length;
    try {
      let pos = 0;
      while (pos < end) {
        if (this.#bulk !== null) pos = this.#fillBulk(buf, pos, end);
        else if (this.#lineLen > 0) pos = this.#completeLine(buf, pos, end);
        else pos = this.#run(buf, pos, end);
      }
      this.#base += end;
    } catch (e) {
      this.#failed = e;
      throw e;
    } finally {
      this.#feeding = false;
    }
  }

  /**
   * Parses tokens from `pos` until the buffer ends; returns `end`.
   * A cut line token is saved in `#line`, a cut payload in `#bulk`.
   */
  #run(buf: Buffer, pos: number, end: number): number {
    const tree = this.#tree;
    const base = this.#base;
    while (pos < end) {
      const start = pos;
      const type = buf[pos]!;
      if (this.#stream !== null) {
        if (type !== T_CHUNK) fail("expected ';' (a streamed string part)", base + pos);
      } else {
        if (type === T_CHUNK) fail("';' outside a streamed string", base + pos);
        if (tree.depth === 0) this.#bin = type === T_PUSH ? this.pushBuffers : this.buffers;
      }
      if (type === T_BULK) {
        // Fast path for the commonest reply: `$<1-9 digits>\r\n<payload>\r\n`
        // whole in this buffer. Anything else (null, streamed, `$0`, cuts,
        // errors) is parsed again below by the checked path.
        let q = pos + 1;
        let n = 0;
        let c = buf[q];
        if (c !== 48) { // "0": `$0` or a leading zero
          const lim = Math.min(end, pos + 11);
          while (q < lim) {
            c = buf[q]!;
            if (c < 48 || c > 57) break;
            n = n * 10 + (c - 48);
            q++;
          }
          const stop = q + 2 + n;
          if (
            c === CR && q > pos + 1 && stop + 2 <= end && n <= this.#maxBulk && buf[q + 1] === LF && buf[stop] === CR &&
            buf[stop + 1] === LF
          ) {
            pos = stop + 2;
            tree.value(this.#bin ? copyBytes(buf, q + 2, stop) : utf8(buf, q + 2, stop));
            continue;
          }
        }
      }
      switch (type) {
        case T_BULK:
        case T_VERBATIM:
        case T_BLOBERR:
        case T_CHUNK: {
          const flags = type === T_BULK ? NULLABLE | CAN_STREAM : 0;
          const p = readLength(buf, pos + 1, end, flags, this.#maxBulk, base);
          if (p < 0) return this.#partial(buf, start, end);
          const n = parsed.n;
          if (n < 0) {
            if (n === LEN_NULL) tree.value(null);
            else this.#stream = [];
            pos = p;
            continue;
          }
          if (type === T_CHUNK) {
            if (n === 0) {
              pos = p;
              this.#endStream();
              continue;
            }
            if (this.#streamLen + n > this.#maxBulk) {
              fail(`streamed string longer than ${this.#maxBulk} bytes`, base + start);
            }
          }
          const stop = p + n;
          if (stop + 2 > end) return this.#startBulk(type, buf, p, end, n);
          if (buf[stop] !== CR) fail("expected CR after the payload", base + stop);
          if (buf[stop + 1] !== LF) fail("expected LF after the payload", base + stop + 1);
          pos = stop + 2;
          if (type === T_BULK) tree.value(this.#bin ? copyBytes(buf, p, stop) : utf8(buf, p, stop));
          else if (type === T_CHUNK) this.#streamPart(copyBytes(buf, p, stop));
          else this.#payload(type, buf, p, stop, base, copyBytes);
          continue;
        }
        case T_ARRAY:
        case T_MAP:
        case T_SET:
        case T_ATTR:
        case T_PUSH: {
          const flags = type === T_ARRAY ? NULLABLE | CAN_STREAM : CAN_STREAM;
          const p = readLength(buf, pos + 1, end, flags, tree.maxLength, base);
          if (p < 0) return this.#partial(buf, start, end);
          pos = p;
          const n = parsed.n;
          if (n === LEN_NULL) tree.value(null);
          else {
            const kind = type === T_MAP ? MAP : type === T_ATTR ? ATTRIBUTE : type === T_PUSH ? PUSH : ARRAY;
            tree.open(kind, n < 0 ? STREAMED : n, base + start);
          }
          continue;
        }
        case T_INTEGER: {
          // Fast path: up to 15 digits, no sign, CRLF in this buffer. All
          // else (signs, bigints, cuts, errors) goes to readInteger.
          let q = pos + 1;
          let n = 0;
          let c = 0;
          const lim = Math.min(end, pos + 16);
          while (q < lim) {
            c = buf[q]!;
            if (c < 48 || c > 57) break;
            n = n * 10 + (c - 48);
            q++;
          }
          if (c === CR && q > pos + 1 && q + 1 < end && buf[q + 1] === LF) {
            pos = q + 2;
            tree.value(n);
            continue;
          }
          const p = readInteger(buf, pos, end, base);
          if (p < 0) return this.#partial(buf, start, end);
          pos = p;
          tree.value(parsed.big === null ? parsed.n : parsed.big);
          continue;
        }
        case T_SIMPLE:
        case T_ERROR:
        case T_DOUBLE:
        case T_BIGNUM: {
          const cr = findLineEnd(buf, start, end, base);
          if (cr < 0) return this.#partial(buf, start, end);
          pos = cr + 2;
          if (type === T_SIMPLE) tree.value(utf8(buf, start + 1, cr));
          else if (type === T_ERROR) tree.value(new RedisReplyError(utf8(buf, start + 1, cr)));
          else if (type === T_DOUBLE) {
            const d = parseDouble(latin1(buf, start + 1, cr));
            if (d === undefined) fail("invalid double", base + start + 1);
            tree.value(d);
          } else tree.value(parseBigNumber(buf, start + 1, cr, base));
          continue;
        }
        case T_NULL:
        case T_END: {
          const p = readCrlf(buf, pos + 1, end, base);
          if (p < 0) return this.#partial(buf, start, end);
          pos = p;
          if (type === T_NULL) tree.value(null);
          else tree.end(base + start);
          continue;
        }
        case T_BOOLEAN: {
          if (pos + 1 >= end) return this.#partial(buf, start, end);
          const c = buf[pos + 1];
          if (c !== 116 && c !== 102) fail("boolean must be 't' or 'f'", base + pos + 1); // t, f
          const p = readCrlf(buf, pos + 2, end, base);
          if (p < 0) return this.#partial(buf, start, end);
          pos = p;
          tree.value(c === 116);
          continue;
        }
        default:
          fail(`unknown type byte 0x${type.toString(16).padStart(2, "0")}`, base + pos);
      }
    }
    return end;
  }

  /**
   * Value of a complete `=` verbatim or `!` blob error payload at
   * `buf[a, b)`; `base` is the absolute offset of `buf[0]`. `copy` makes
   * the bytes of a buffers-mode value: a copy out of a fed chunk, or a
   * plain view of a payload the decoder allocated.
   */
  #payload(
    type: number,
    buf: Buffer,
    a: number,
    b: number,
    base: number,
    copy: (buf: Buffer, a: number, b: number) => Uint8Array,
  ): void {
    if (type === T_BLOBERR) {
      this.#tree.value(new RedisReplyError(utf8(buf, a, b)));
      return;
    }
    // `=15\r\ntxt:Some string\r\n`: a 3-byte format and a colon come first.
    if (b - a < 4) fail("verbatim string shorter than its 4-byte format prefix", base + a);
    if (buf[a + 3] !== 58) fail("verbatim string format must be 3 bytes and ':'", base + a + 3);
    this.#tree.value(this.#bin ? copy(buf, a + 4, b) : utf8(buf, a + 4, b));
  }

  /** Saves a cut line token `buf[start, end)` for the next chunk; returns `end`. */
  #partial(buf: Buffer, start: number, end: number): number {
    const len = end - start;
    if (buf !== this.#line) {
      if (this.#line.length < len) this.#line = Buffer.allocUnsafe(Math.max(len, this.#line.length * 2));
      buf.copy(this.#line, 0, start, end);
      this.#lineStart = this.#base + start;
    }
    this.#lineLen = len;
    return end;
  }

  /**
   * Appends the rest of a cut line (up to the first LF, and never
   * more than LINE_MAX + 2 bytes in all, enough for any line to be decided)
   * and parses it again from its type byte, so errors and offsets are those
   * of an uncut stream. Only the line's own bytes are copied, never the
   * whole chunk.
   */
  #completeLine(buf: Buffer, pos: number, end: number): number {
    const lf = buf.indexOf(LF, pos);
    let stop = lf === -1 ? end : lf + 1;
    const have = this.#lineLen;
    if (have + (stop - pos) > LINE_MAX + 2) stop = pos + (LINE_MAX + 2 - have);
    const need = have + (stop - pos);
    if (this.#line.length < need) {
      const grown = Buffer.allocUnsafe(Math.min(Math.max(need, this.#line.length * 2), LINE_MAX + 2));
      this.#line.copy(grown, 0, 0, have);
      this.#line = grown;
    }
    buf.copy(this.#line, have, pos, stop);
    const type = this.#line[0];
    if (
      lf === -1 && need <= LINE_MAX &&
      (type === T_SIMPLE || type === T_ERROR || type === T_INTEGER || type === T_DOUBLE || type === T_BIGNUM)
    ) {
      // A text line still without its LF: parsing it again now could only
      // find an error that parsing it once whole finds at the same offset,
      // and re-scanning on every chunk would cost O(n^2) when fed in tiny
      // pieces. Headers (lengths, `#`, `_`, `.`) are always re-checked at
      // once: they are short, and absurd lengths must be refused early.
      this.#lineLen = need;
      return stop;
    }
    this.#lineLen = 0;
    const base = this.#base;
    this.#base = this.#lineStart;
    try {
      this.#run(this.#line, 0, need);
    } finally {
      this.#base = base;
    }
    return stop;
  }

  /**
   * Starts a payload cut by the end of the chunk. The declared length `n`
   * is only an upper bound here: the first allocation holds what this chunk
   * has, or 64 KiB, never more than `n`; `#fillBulk` grows it as bytes come.
   */
  #startBulk(type: number, buf: Buffer, p: number, end: number, n: number): number {
    this.#bulkType = type;
    this.#bulkLen = n;
    this.#bulkAt = this.#base + p;
    this.#bulkFill = 0;
    this.#bulkCrlf = 0;
    this.#bulk = this.#newBulk(Math.min(n, Math.max(BULK_FIRST, end - p)));
    return this.#fillBulk(buf, p, end);
  }

  /**
   * Memory for `#bulk`. Buffers-mode values get a plain Uint8Array, returned
   * as is; text is decoded from a Buffer, which may come from Node's pool.
   */
  #newBulk(size: number): Uint8Array {
    return this.#bin && this.#bulkType !== T_BLOBERR ? unfilledBytes(size) : Buffer.allocUnsafe(size);
  }

  /**
   * Copies payload bytes into `#bulk`, growing it to at least twice its
   * capacity when they do not fit (capped at the declared length), then
   * checks its CRLF; emits the value when whole.
   */
  #fillBulk(buf: Buffer, pos: number, end: number): number {
    let bytes = this.#bulk!;
    const n = this.#bulkLen;
    if (this.#bulkFill < n) {
      const take = Math.min(n - this.#bulkFill, end - pos);
      const need = this.#bulkFill + take;
      if (need > bytes.length) {
        const grown = this.#newBulk(Math.min(n, Math.max(need, bytes.length * 2)));
        grown.set(bytes.subarray(0, this.#bulkFill));
        this.#bulk = bytes = grown;
      }
      bytes.set(buf.subarray(pos, pos + take), this.#bulkFill);
      this.#bulkFill += take;
      pos += take;
      if (this.#bulkFill < n) return pos;
    }
    while (this.#bulkCrlf < 2) {
      if (pos >= end) return pos;
      const want = this.#bulkCrlf === 0 ? CR : LF;
      if (buf[pos] !== want) {
        fail(`expected ${want === CR ? "CR" : "LF"} after the payload`, this.#bulkAt + n + this.#bulkCrlf);
      }
      this.#bulkCrlf++;
      pos++;
    }
    this.#bulk = null;
    const type = this.#bulkType;
    if (type === T_BULK) this.#tree.value(this.#bin ? bytes : utf8(bytes as Buffer, 0, n));
    else if (type === T_CHUNK) this.#streamPart(bytes);
    else this.#payload(type, asBuffer(bytes), 0, n, this.#bulkAt, viewBytes);
    return pos;
  }

  #streamPart(bytes: Uint8Array): void {
    this.#stream!.push(bytes);
    this.#streamLen += bytes.length;
  }

  /** `;0\r\n` ends a streamed string: its parts are joined once. */
  #endStream(): void {
    const parts = this.#stream!;
    const total = this.#streamLen;
    this.#stream = null;
    this.#streamLen = 0;
    const out = this.#bin ? new Uint8Array(total) : Buffer.allocUnsafe(total);
    let at = 0;
    for (const part of parts) {
      out.set(part, at);
      at += part.length;
    }
    this.#tree.value(this.#bin ? out : utf8(out as Buffer, 0, total));
  }
}
