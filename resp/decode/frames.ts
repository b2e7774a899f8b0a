/**
 * The RESP frame parser behind `Decoder`: it walks the bytes token by token,
 * hands finished values to the reply tree (`tree.ts`), and keeps
 * what a chunk boundary cuts: a header or text line (in a small line
 * buffer), a payload (`bulk.ts`), the parts of a streamed string.
 * Every malformed input throws a ProtocolError whose offset counts from the
 * start of the stream, the same however the stream was split. Internal;
 * not re-exported.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { RedisReplyError } from "../errors.ts";
import { asBuffer, copyBytes, utf8 } from "./scalars.ts";
import { AGGREGATE, CAN_STREAM, fail, LEN_NULL, LINE_MAX, LineReader, NULLABLE } from "./lines.ts";
import { CutPayload, StreamedString, viewBytes } from "./bulk.ts";
import { ARRAY, ATTRIBUTE, MAP, PUSH, ReplyTree, STREAMED, type TreeHandlers } from "./tree.ts";

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
 * The smallest payload whose header is announced (`TreeHandlers.announced`)
 * before its bytes arrive: a reply this large takes long enough to arrive
 * that a deadline counted before it was known may need to grow.
 */
export const ANNOUNCED_BYTES = 1024 * 1024;

/** The decoder's modes, read when each top-level frame starts (a reply handler may change them for the next). */
export interface Modes {
  readonly buffers: boolean;
  readonly pushBuffers: boolean;
}

/** The decoder's limits, checked before anything is allocated. */
export interface Limits {
  readonly maxBulkBytes: number;
  readonly maxAggregateLength: number;
  readonly maxDepth: number;
}

/**
 * `=15\r\ntxt:Some string\r\n`: a 3-byte format and a colon precede the
 * text of the verbatim payload `buf[a, b)`. Returns where the text starts;
 * `at` is the absolute stream offset of `buf[a]`.
 */
function verbatimText(buf: Buffer, a: number, b: number, at: number): number {
  if (b - a < 4) fail("verbatim string shorter than its 4-byte format prefix", at);
  if (buf[a + 3] !== 58) fail("verbatim string format must be 3 bytes and ':'", at + 3);
  return a + 4;
}

/** Parses one connection's stream; `feed` it every chunk in order. */
export class FrameParser {
  // `#private` state: measured no slower than plain properties in a hot
  // loop on Node 20, Bun 1.4 and Deno 2.9, and decode_micro gave the same
  // figures with either.
  readonly #modes: Modes;
  /** Open aggregates and where finished values go. */
  readonly #tree: ReplyTree;
  /** Checked line parsing; holds the stream offset of the buffer being parsed (`base`). */
  readonly #lines: LineReader;
  readonly #maxBulk: number;
  /** Buffers mode of the top-level frame being decoded. */
  #bin = false;
  /** The top-level frame being decoded is a push: its payloads belong to no command. */
  #push = false;
  readonly #announced: ((length: number) => void) | undefined;
  /** A line token cut by the end of a chunk, kept until it is whole. */
  #line: Buffer = Buffer.allocUnsafe(64);
  #lineLen = 0;
  /** Absolute offset of `#line[0]`. */
  #lineStart = 0;
  /** A length-prefixed token whose payload the end of a chunk cut. */
  readonly #cut = new CutPayload();
  readonly #stream = new StreamedString();

  /**
   * @param handlers receive replies and pushes.
   * @param modes read at each top-level frame: return bulk strings as bytes?
   * @param limits checked limits, already validated.
   */
  constructor(handlers: TreeHandlers, modes: Modes, limits: Limits) {
    this.#modes = modes;
    this.#announced = handlers.announced?.bind(handlers);
    this.#maxBulk = limits.maxBulkBytes;
    this.#lines = new LineReader(limits.maxBulkBytes, limits.maxAggregateLength);
    this.#tree = new ReplyTree(handlers, limits.maxAggregateLength, limits.maxDepth);
  }

  /** Parse the next bytes of the stream; handlers are called for every frame they complete. */
  feed(buf: Buffer): void {
    const end = buf.length;
    if (buf[0] === T_BULK && this.#single(buf, end)) {
      this.#lines.base += end;
      return;
    }
    let pos = 0;
    while (pos < end) {
      if (this.#cut.active) pos = this.#fillCut(buf, pos, end);
      else if (this.#lineLen > 0) pos = this.#completeLine(buf, pos, end);
      else pos = this.#run(buf, pos, end);
    }
    this.#lines.base += end;
  }

  /**
   * The chunk is exactly one whole top-level bulk string (`$<1-9 digits>\r\n<payload>\r\n`
   * and nothing else, nothing pending): emit it and return true. A
   * sequential GET's reply takes this path and never enters `#run`, whose
   * size makes JSC's optimizing compile cost ~70-120 ms of a pinned core
   * (measured under Bun 1.4.5): a small hot function is compiled in a few.
   * Anything else returns false before emitting, and `#run` parses it.
   */
  #single(buf: Buffer, end: number): boolean {
    if (this.#lineLen > 0 || this.#cut.active || this.#stream.active || this.#tree.depth !== 0) return false;
    const stop = this.#wholeBulk(buf, 0, end);
    if (stop < 0 || stop + 2 !== end) return false;
    const bin = this.#modes.buffers;
    this.#bin = bin;
    this.#tree.value(bin ? copyBytes(buf, this.#payloadAt, stop) : utf8(buf, this.#payloadAt, stop));
    return true;
  }

  /** Where {@linkcode FrameParser.#wholeBulk}'s payload starts. */
  #payloadAt = 0;

  /**
   * The bulk string at `pos` when it is `$<1-9 digits>\r\n<payload>\r\n`,
   * whole before `end`, and within the limit: returns where its payload ends
   * (and sets `#payloadAt`), or -1. Anything else (null, streamed, `$0`, a
   * leading zero, cuts, errors) is for the checked path to parse.
   */
  #wholeBulk(buf: Buffer, pos: number, end: number): number {
    let q = pos + 1;
    let n = 0;
    let c = buf[q];
    if (c === 48) return -1; // "0": `$0` or a leading zero
    const lim = Math.min(end, pos + 11);
    while (q < lim) {
      c = buf[q]!;
      if (c < 48 || c > 57) break;
      n = n * 10 + (c - 48);
      q++;
    }
    const stop = q + 2 + n;
    if (
      c !== CR || q === pos + 1 || stop + 2 > end || n > this.#maxBulk || buf[q + 1] !== LF || buf[stop] !== CR ||
      buf[stop + 1] !== LF
    ) return -1;
    this.#payloadAt = q + 2;
    return stop;
  }

  /**
   * Parses tokens from `pos` until the buffer ends; returns `end`.
   * A cut line token is saved in `#line`, a cut payload in `#cut`.
   */
  #run(buf: Buffer, pos: number, end: number): number {
    const tree = this.#tree;
    const lines = this.#lines;
    const base = lines.base;
    while (pos < end) {
      const start = pos;
      const type = buf[pos]!;
      if (this.#stream.active) {
        if (type !== T_CHUNK) fail("expected ';' (a streamed string part)", base + pos);
      } else {
        if (type === T_CHUNK) fail("';' outside a streamed string", base + pos);
        if (tree.depth === 0) {
          this.#push = type === T_PUSH;
          this.#bin = this.#push ? this.#modes.pushBuffers : this.#modes.buffers;
        }
      }
      if (type === T_BULK) {
        // Fast path for the commonest reply, whole in this buffer; anything
        // else is parsed again below by the checked path.
        const stop = this.#wholeBulk(buf, pos, end);
        if (stop >= 0) {
          pos = stop + 2;
          tree.value(this.#bin ? copyBytes(buf, this.#payloadAt, stop) : utf8(buf, this.#payloadAt, stop));
          continue;
        }
      }
      switch (type) {
        case T_BULK:
        case T_VERBATIM:
        case T_BLOBERR:
        case T_CHUNK: {
          const flags = type === T_BULK ? NULLABLE | CAN_STREAM : 0;
          const p = lines.length(buf, pos + 1, end, flags);
          if (p < 0) return this.#partial(buf, start, end);
          const n = lines.n;
          if (n < 0) {
            if (n === LEN_NULL) tree.value(null);
            else this.#stream.start();
            pos = p;
            continue;
          }
          if (type === T_CHUNK) {
            if (n === 0) {
              pos = p;
              tree.value(this.#stream.end(this.#bin));
              continue;
            }
            if (this.#stream.length + n > this.#maxBulk) {
              fail(`streamed string longer than ${this.#maxBulk} bytes`, base + start);
            }
          }
          const stop = p + n;
          if (stop + 2 > end) {
            // Only a payload that is not here yet is announced: one whole in this chunk has arrived already.
            if (n >= ANNOUNCED_BYTES && !this.#push) this.#announced?.(n);
            this.#cut.begin(type, n, base + p, this.#bin && type !== T_BLOBERR);
            return this.#fillCut(buf, p, end);
          }
          if (buf[stop] !== CR) fail("expected CR after the payload", base + stop);
          if (buf[stop + 1] !== LF) fail("expected LF after the payload", base + stop + 1);
          pos = stop + 2;
          if (type === T_BULK) tree.value(this.#bin ? copyBytes(buf, p, stop) : utf8(buf, p, stop));
          else if (type === T_CHUNK) this.#stream.add(copyBytes(buf, p, stop));
          else if (type === T_BLOBERR) tree.value(new RedisReplyError(utf8(buf, p, stop)));
          else {
            const text = verbatimText(buf, p, stop, base + p);
            tree.value(this.#bin ? copyBytes(buf, text, stop) : utf8(buf, text, stop));
          }
          continue;
        }
        case T_ARRAY:
        case T_MAP:
        case T_SET:
        case T_ATTR:
        case T_PUSH: {
          const flags = type === T_ARRAY ? AGGREGATE | NULLABLE | CAN_STREAM : AGGREGATE | CAN_STREAM;
          const p = lines.length(buf, pos + 1, end, flags);
          if (p < 0) return this.#partial(buf, start, end);
          pos = p;
          const n = lines.n;
          if (n === LEN_NULL) tree.value(null);
          else {
            const kind = type === T_MAP ? MAP : type === T_ATTR ? ATTRIBUTE : type === T_PUSH ? PUSH : ARRAY;
            tree.open(kind, n < 0 ? STREAMED : n, base + start);
          }
          continue;
        }
        case T_INTEGER: {
          // Fast path: up to 15 digits, no sign, CRLF in this buffer. All
          // else (signs, bigints, cuts, errors) goes to lines.integer.
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
          const p = lines.integer(buf, pos, end);
          if (p < 0) return this.#partial(buf, start, end);
          pos = p;
          tree.value(lines.big === null ? lines.n : lines.big);
          continue;
        }
        case T_SIMPLE:
        case T_ERROR:
        case T_DOUBLE:
        case T_BIGNUM: {
          const cr = lines.lineEnd(buf, start, end, type === T_SIMPLE || type === T_ERROR);
          if (cr < 0) return this.#partial(buf, start, end);
          pos = cr + 2;
          if (type === T_SIMPLE) tree.value(utf8(buf, start + 1, cr));
          else if (type === T_ERROR) tree.value(new RedisReplyError(utf8(buf, start + 1, cr)));
          else if (type === T_DOUBLE) {
            tree.value(lines.double(buf, start + 1, cr));
          } else tree.value(lines.bigNumber(buf, start + 1, cr));
          continue;
        }
        case T_NULL:
        case T_END: {
          const p = lines.crlf(buf, pos + 1, end);
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
          const p = lines.crlf(buf, pos + 2, end);
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

  /** Saves a cut line token `buf[start, end)` for the next chunk; returns `end`. */
  #partial(buf: Buffer, start: number, end: number): number {
    const len = end - start;
    if (buf !== this.#line) {
      if (this.#line.length < len) this.#line = Buffer.allocUnsafe(Math.max(len, this.#line.length * 2));
      buf.copy(this.#line, 0, start, end);
      this.#lineStart = this.#lines.base + start;
    }
    this.#lineLen = len;
    return end;
  }

  /**
   * Appends the rest of a cut line (up to the first LF, never more than its
   * limit allows) and parses it again from its type byte, so errors and
   * offsets are those of an uncut stream. Only the line's own bytes are
   * copied, and the buffer grows with the bytes that arrive, never ahead.
   */
  #completeLine(buf: Buffer, pos: number, end: number): number {
    const lf = buf.indexOf(LF, pos);
    let stop = lf === -1 ? end : lf + 1;
    const have = this.#lineLen;
    const type = this.#line[0];
    const text = type === T_SIMPLE || type === T_ERROR;
    // Bytes of the longest line of this type, CRLF included.
    const cap = text ? this.#lines.textMax + 3 : LINE_MAX + 2;
    if (have + (stop - pos) > cap) stop = pos + (cap - have);
    const need = have + (stop - pos);
    if (this.#line.length < need) {
      const grown = Buffer.allocUnsafe(Math.min(Math.max(need, this.#line.length * 2), cap));
      this.#line.copy(grown, 0, 0, have);
      this.#line = grown;
    }
    buf.copy(this.#line, have, pos, stop);
    // A text or number line with no CR or LF yet: parsing it again now
    // could only find an error that parsing it once whole finds at the same
    // offset, and re-scanning on every chunk would cost O(n^2) when fed in
    // tiny pieces. A CR (new, or held last) ends the line or is an error:
    // parse now rather than buffering up to the limit. Headers (lengths,
    // `#`, `_`, `.`) are re-checked at once: absurd lengths are refused early.
    if (
      lf === -1 && need <= cap - 2 && (text || type === T_INTEGER || type === T_DOUBLE || type === T_BIGNUM) &&
      this.#line[have - 1] !== CR && buf.indexOf(CR, pos) === -1
    ) {
      this.#lineLen = need;
      return stop;
    }
    this.#lineLen = 0;
    const lines = this.#lines;
    const base = lines.base;
    lines.base = this.#lineStart;
    try {
      this.#run(this.#line, 0, need);
    } finally {
      lines.base = base;
    }
    // A text line may be as long as maxBulkBytes: let its buffer go.
    if (this.#lineLen === 0 && this.#line.length > LINE_MAX + 2) this.#line = Buffer.allocUnsafe(64);
    return stop;
  }

  /** Feeds the cut payload; emits its value once it is whole. */
  #fillCut(buf: Buffer, pos: number, end: number): number {
    const cut = this.#cut;
    pos = cut.fill(buf, pos, end);
    if (!cut.complete) return pos;
    const type = cut.type;
    const n = cut.length;
    const bytes = cut.take();
    if (type === T_BULK) this.#tree.value(this.#bin ? bytes : utf8(bytes as Buffer, 0, n));
    else if (type === T_CHUNK) this.#stream.add(bytes);
    else if (type === T_BLOBERR) this.#tree.value(new RedisReplyError(utf8(bytes as Buffer, 0, n)));
    else {
      const own = asBuffer(bytes);
      const text = verbatimText(own, 0, n, cut.at);
      this.#tree.value(this.#bin ? viewBytes(own, text, n) : utf8(own, text, n));
    }
    return pos;
  }
}
