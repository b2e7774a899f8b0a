/**
 * Checked parsing of RESP header and text lines for the decoder: lengths,
 * CRLFs, integers, big numbers and line ends. Each method of
 * {@linkcode LineReader} reads `buf[p, end)`, returns the position after
 * what it read, or -1 when the buffer ends first (the caller keeps the bytes
 * and calls again with more), and throws a ProtocolError at the first byte
 * that cannot be valid, its offset counted from the start of the stream
 * (`base` is where `buf[0]` lies in it). The same bytes give the same error
 * whichever way they were split. Internal; not re-exported.
 *
 * @module
 */
import type { Buffer } from "node:buffer";
import { ProtocolError } from "../errors.ts";
import { bigInteger, latin1 } from "./scalars.ts";

const CR = 13;
const LF = 10;
const MINUS = 45;
const PLUS = 43;
const ZERO = 48;
const NINE = 57;

/**
 * Bytes of a header or number line before its CR (type byte included)
 * beyond which it is refused: lengths, integers, doubles, big numbers. Text
 * lines (simple strings, simple errors) are payloads and have a limit of
 * their own, {@linkcode LineReader.textMax}.
 */
export const LINE_MAX = 65536;

/** `-1` is allowed: `$-1`, `*-1` (RESP2 nulls). */
export const NULLABLE = 1;
/** `?` is allowed: a streamed string or aggregate. */
export const CAN_STREAM = 2;
/** An element count, capped by `maxLength`; without it a byte count, capped by `maxBulk`. */
export const AGGREGATE = 4;
/** `n` of `-1`. */
export const LEN_NULL = -1;
/** `n` of `?`. */
export const LEN_STREAMED = -2;

/** Throws the ProtocolError for the byte at absolute offset `offset`. */
export function fail(message: string, offset: number): never {
  throw new ProtocolError(`Invalid RESP: ${message}`, offset);
}

/** The checked line parsers of one decoder, with its stream position and limits. */
export class LineReader {
  /** Absolute stream offset of `buf[0]` in the buffer being parsed. */
  base = 0;
  /**
   * Where `length` and `integer` leave what they read, so a header costs no
   * allocation. Valid only right after a call that did not return -1
   * (decoding is synchronous, so nothing runs in between). An integer is in
   * `n` unless it needs `big`; two fields rather than one `number | bigint`
   * keep `n` a plain number field (measured 15% faster on integer replies).
   */
  n = 0;
  /** See {@linkcode LineReader.n}. */
  big: bigint | null = null;
  /** Largest byte count a length header may declare. */
  readonly maxBulk: number;
  /** Largest element count an aggregate header may declare. */
  readonly maxLength: number;
  /**
   * Most bytes a simple string or simple error may hold between its type
   * byte and its CR: `maxBulkBytes`, and never fewer than a header line, so
   * a tight `maxBulkBytes` still lets `+OK` and error messages through.
   * They are payloads, not headers: Redis sends them of any length (a Lua
   * script's `redis.status_reply()` or `redis.error_reply()`).
   */
  readonly textMax: number;

  /**
   * @param maxBulk largest byte count a length header may declare.
   * @param maxLength largest element count an aggregate header may declare.
   */
  constructor(maxBulk: number, maxLength: number) {
    this.maxBulk = maxBulk;
    this.maxLength = maxLength;
    this.textMax = Math.max(maxBulk, LINE_MAX - 1);
  }

  /** Checks `\r\n` at `p`; returns the position after it. */
  crlf(buf: Buffer, p: number, end: number): number {
    if (p >= end) return -1;
    if (buf[p] !== CR) fail("expected CR", this.base + p);
    if (p + 1 >= end) return -1;
    if (buf[p + 1] !== LF) fail("expected LF", this.base + p + 1);
    return p + 2;
  }

  /**
   * Reads `<digits>\r\n` (or `-1`, `?` where `flags` allow) at `p` into
   * `n`. Every digit is checked against the cap (`maxLength` with
   * `AGGREGATE` in `flags`, else `maxBulk`) as it is seen, so an absurd
   * length is refused on its digits, before any payload is waited for or
   * allocated. No leading zeros: a length is then at most 16 digits, and a
   * header can never grow into an unbounded line.
   */
  length(buf: Buffer, p: number, end: number, flags: number): number {
    if (p >= end) return -1;
    const base = this.base;
    const cap = (flags & AGGREGATE) !== 0 ? this.maxLength : this.maxBulk;
    let c = buf[p]!;
    let n = 0;
    if (c >= ZERO && c <= NINE) {
      n = c - ZERO;
      if (n > cap) fail(`length exceeds the limit of ${cap}`, base + p);
      p++;
      if (n === 0) {
        if (p < end && buf[p]! >= ZERO && buf[p]! <= NINE) fail("leading zero in length", base + p);
      } else {
        while (p < end) {
          c = buf[p]!;
          if (c < ZERO || c > NINE) break;
          n = n * 10 + (c - ZERO);
          if (n > cap) fail(`length exceeds the limit of ${cap}`, base + p);
          p++;
        }
      }
    } else if (c === MINUS && (flags & NULLABLE) !== 0) {
      if (++p >= end) return -1;
      if (buf[p] !== 49) fail("negative length other than -1", base + p); // "1"
      p++;
      n = LEN_NULL;
    } else if (c === 63 && (flags & CAN_STREAM) !== 0) { // "?"
      p++;
      n = LEN_STREAMED;
    } else fail("expected a digit in length", base + p);
    const q = this.crlf(buf, p, end);
    if (q >= 0) this.n = n;
    return q;
  }

  /**
   * Finds the CR ending the line whose type byte is at `start` and checks
   * the LF after it; returns the CR's position. A bare LF is refused (a peer
   * framing lines with LF alone would otherwise stall), and so is a line
   * longer than its limit, rather than buffering it without bound: a text
   * line (`text`: simple string or error) may hold `textMax` bytes after its
   * type byte, any other line `LINE_MAX` bytes with its type byte.
   */
  lineEnd(buf: Buffer, start: number, end: number, text: boolean): number {
    // The last position the CR may lie at; the byte there is the first
    // beyond the limit when it is not the CR.
    const last = text ? start + 1 + this.textMax : start + LINE_MAX;
    // `end`, not `buf.length`: the buffer may be the decoder's line buffer,
    // whose bytes past `end` are stale.
    const lim = Math.min(end, last + 1);
    let p = start + 1;
    // Most lines are short (OK, QUEUED, error messages): a JS loop beats two
    // native scans there; long lines switch to native scans.
    const quick = Math.min(lim, start + 64);
    while (p < quick) {
      const c = buf[p]!;
      if (c === CR || c === LF) break;
      p++;
    }
    if (p === quick && quick < lim) {
      const cr = buf.indexOf(CR, p);
      const lf = buf.indexOf(LF, p);
      p = Math.min(cr === -1 || cr > lim ? lim : cr, lf === -1 || lf > lim ? lim : lf);
    }
    if (p === lim) {
      if (lim > last) {
        fail(
          text
            ? `${buf[start] === 45 ? "simple error" : "simple string"} longer than ${this.textMax} bytes (maxBulkBytes)`
            : `line longer than ${LINE_MAX} bytes`,
          this.base + last,
        );
      }
      return -1;
    }
    if (buf[p] === LF) fail("LF without CR", this.base + p);
    if (p + 1 >= end) return -1;
    if (buf[p + 1] !== LF) fail("expected LF", this.base + p + 1);
    return p;
  }

  /**
   * Reads a `:` integer line whose type byte is at `start` into `n`, or
   * `big` beyond 2^53 - 1, arithmetically from the bytes: a number when
   * exact, a bigint beyond 2^53 - 1, so int64 values stay exact (ioredis#2164).
   */
  integer(buf: Buffer, start: number, end: number): number {
    let p = start + 1;
    const limit = Math.min(end, start + LINE_MAX + 1);
    if (p >= limit) return -1;
    const sign = buf[p];
    if (sign === MINUS || sign === PLUS) p++;
    const digits = p;
    let n = 0;
    while (p < limit) {
      const c = buf[p]!;
      if (c < ZERO || c > NINE) break;
      n = n * 10 + (c - ZERO);
      p++;
    }
    if (p === limit) {
      if (limit === end && end <= start + LINE_MAX) return -1;
      fail(`line longer than ${LINE_MAX} bytes`, this.base + start + LINE_MAX);
    }
    if (p === digits) fail("expected a digit in integer", this.base + p);
    const q = this.crlf(buf, p, end);
    if (q < 0) return -1;
    // Up to 15 digits the running double is exact; beyond, re-parse exactly.
    if (p - digits > 15) {
      const value = bigInteger(sign === MINUS, latin1(buf, digits, p));
      // Refused rather than passed on as a bigint: the spec calls such a
      // line invalid, and a stream that sends one is not Redis.
      if (value === undefined) fail("integer outside the signed 64-bit range", this.base + digits);
      if (typeof value === "bigint") {
        this.big = value;
        return q;
      }
      n = value;
    } else if (sign === MINUS) n = 0 - n; // `0 - n`: never -0
    this.n = n;
    this.big = null;
    return q;
  }

  /**
   * The `,` double between `a` and the line's CR `cr`, checked byte by byte
   * so an error names the first byte that cannot belong to one: an optional
   * sign, then digits with an optional fraction (`3.`, `.5`) and exponent,
   * or `inf` or `nan` in any case, `nan` with an optional `(chars)` payload.
   * Servers before Redis 7.2 printed doubles with the C library, which
   * spells them `INF`, `NAN`, `nan(0x7ff...)` or `-nan` depending on the
   * platform; RESP3 asks clients to accept those. The value of a numeric
   * form is JS `Number()`'s, correctly rounded (bit-exact at the extremes).
   */
  double(buf: Buffer, a: number, cr: number): number {
    const base = this.base;
    let p = a;
    if (p < cr && (buf[p] === MINUS || buf[p] === PLUS)) p++;
    const c = p < cr ? buf[p]! | 0x20 : 0; // lower case for letters
    if (c === 105 || c === 110) { // "i", "n"
      const word = c === 105 ? "inf" : "nan";
      for (let i = 1; i < 3; i++) {
        if (p + i >= cr || (buf[p + i]! | 0x20) !== word.charCodeAt(i)) {
          fail(`invalid double, expected ${word}`, base + p + i);
        }
      }
      p += 3;
      if (c === 110 && p < cr && buf[p] === 40) { // "nan(" payload ")"
        p++;
        while (p < cr && isWordByte(buf[p]!)) p++;
        if (p >= cr || buf[p] !== 41) fail("invalid double, expected ')' closing nan(", base + p);
        p++;
      }
      if (p !== cr) fail("invalid double, expected CR", base + p);
      return c === 105 ? (buf[a] === MINUS ? -Infinity : Infinity) : NaN;
    }
    const intStart = p;
    while (p < cr && buf[p]! >= ZERO && buf[p]! <= NINE) p++;
    let digits = p - intStart;
    if (p < cr && buf[p] === 46) { // "."
      p++;
      const fracStart = p;
      while (p < cr && buf[p]! >= ZERO && buf[p]! <= NINE) p++;
      digits += p - fracStart;
    }
    if (digits === 0) fail("invalid double, expected a digit", base + p);
    if (p < cr && (buf[p]! | 0x20) === 101) { // "e"
      p++;
      if (p < cr && (buf[p] === MINUS || buf[p] === PLUS)) p++;
      const expStart = p;
      while (p < cr && buf[p]! >= ZERO && buf[p]! <= NINE) p++;
      if (p === expStart) fail("invalid double, expected a digit in the exponent", base + p);
    }
    if (p !== cr) fail("invalid double, expected CR", base + p);
    return Number(latin1(buf, a, cr));
  }

  /** The `(` big number between `a` and the line's CR `cr`: an optional sign, then digits. */
  bigNumber(buf: Buffer, a: number, cr: number): bigint {
    let p = a;
    if (p < cr && (buf[p] === MINUS || buf[p] === PLUS)) p++;
    if (p === cr) fail("expected a digit in big number", this.base + p);
    for (let i = p; i < cr; i++) {
      const c = buf[i]!;
      if (c < ZERO || c > NINE) fail("expected a digit in big number", this.base + i);
    }
    const big = BigInt(latin1(buf, p, cr));
    return buf[a] === MINUS ? -big : big;
  }
}

/** `[0-9A-Za-z_]`: what a C library may print inside `nan(...)`. */
function isWordByte(c: number): boolean {
  return (c >= ZERO && c <= NINE) || ((c | 0x20) >= 97 && (c | 0x20) <= 122) || c === 95;
}
