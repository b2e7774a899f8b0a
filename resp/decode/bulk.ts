/**
 * Payloads that span chunks: a length-prefixed payload (bulk string,
 * verbatim string, blob error, streamed string part) cut by the end of a
 * chunk, kept until it is whole, and the parts of a streamed string (`$?`).
 * A declared length is only an upper bound on what is allocated: memory
 * follows the bytes that arrive, so a header costing the server a dozen
 * bytes cannot reserve gigabytes. Internal; not re-exported.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { fail } from "./lines.ts";
import { utf8 } from "./scalars.ts";

const CR = 13;
const LF = 10;

/**
 * First allocation for a payload cut across chunks when its declared length
 * is larger: a header costs the server a dozen bytes, so what it declares
 * is never trusted with more memory than this before the bytes arrive.
 */
const BULK_FIRST = 64 * 1024;

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
export function viewBytes(buf: Buffer, a: number, b: number): Uint8Array {
  return new Uint8Array(buf.buffer, buf.byteOffset + a, b - a);
}

/**
 * One cut payload at a time: {@linkcode CutPayload.begin}, then
 * {@linkcode CutPayload.fill} with each chunk until `complete`, then
 * {@linkcode CutPayload.take}. Its capacity starts at min(declared,
 * max(64 KiB, bytes at hand)) and at least doubles when outgrown, capped at
 * the declared length, so it ends exactly that long and the copies add up
 * to O(length).
 */
export class CutPayload {
  /** Type byte of the token. */
  type = 0;
  /** Declared payload length (the final capacity). */
  length = 0;
  /** Absolute stream offset of the first payload byte. */
  at = 0;
  /** True from `begin` to `take`. */
  active = false;
  /** True once the payload and its CRLF have all arrived. */
  complete = false;
  #bytes: Uint8Array | null = null;
  #fill = 0;
  /** How many of the CRLF bytes after the payload were checked. */
  #crlf = 0;
  /** Buffers-mode bytes get a plain Uint8Array, handed out as is; text is decoded from a Buffer (maybe Node's pool). */
  #plain = false;

  /**
   * Start a payload.
   *
   * @param type the token's type byte.
   * @param length its declared length.
   * @param at the absolute stream offset of its first byte.
   * @param plain whether its bytes are handed out as they are (buffers mode), not decoded as text.
   */
  begin(type: number, length: number, at: number, plain: boolean): void {
    this.type = type;
    this.length = length;
    this.at = at;
    this.#plain = plain;
    this.#bytes = null;
    this.#fill = 0;
    this.#crlf = 0;
    this.active = true;
    this.complete = false;
  }

  /**
   * Copies payload bytes from `buf[pos, end)`, growing the buffer to at
   * least twice its capacity when they do not fit (capped at the declared
   * length), then checks the CRLF; sets `complete` when whole.
   *
   * @returns the position after what it took.
   */
  fill(buf: Buffer, pos: number, end: number): number {
    const n = this.length;
    let bytes = this.#bytes;
    if (bytes === null) bytes = this.#bytes = this.#alloc(Math.min(n, Math.max(BULK_FIRST, end - pos)));
    if (this.#fill < n) {
      const take = Math.min(n - this.#fill, end - pos);
      const need = this.#fill + take;
      if (need > bytes.length) {
        const grown = this.#alloc(Math.min(n, Math.max(need, bytes.length * 2)));
        grown.set(bytes.subarray(0, this.#fill));
        this.#bytes = bytes = grown;
      }
      bytes.set(buf.subarray(pos, pos + take), this.#fill);
      this.#fill += take;
      pos += take;
      if (this.#fill < n) return pos;
    }
    while (this.#crlf < 2) {
      if (pos >= end) return pos;
      const want = this.#crlf === 0 ? CR : LF;
      if (buf[pos] !== want) {
        fail(`expected ${want === CR ? "CR" : "LF"} after the payload`, this.at + n + this.#crlf);
      }
      this.#crlf++;
      pos++;
    }
    this.complete = true;
    return pos;
  }

  /** The whole payload, exactly `length` bytes; the cut is over. */
  take(): Uint8Array {
    const bytes = this.#bytes!;
    this.#bytes = null;
    this.active = false;
    this.complete = false;
    return bytes;
  }

  #alloc(size: number): Uint8Array {
    return this.#plain ? unfilledBytes(size) : Buffer.allocUnsafe(size);
  }
}

/** The parts of a streamed string (`$?` then `;<n>` parts, ended by `;0`), joined once at its end. */
export class StreamedString {
  #parts: Uint8Array[] = [];
  /** True between `$?` and its `;0`. A field, not a getter: the parser reads it for every token. */
  active = false;
  /** Bytes received so far, for the `maxBulkBytes` check. */
  length = 0;

  /** `$?` starts one. */
  start(): void {
    this.#parts = [];
    this.length = 0;
    this.active = true;
  }

  /** One part's bytes, a copy the string may keep. */
  add(bytes: Uint8Array): void {
    this.#parts.push(bytes);
    this.length += bytes.length;
  }

  /**
   * `;0` ends it: the parts joined once.
   *
   * @param bin buffers mode: the bytes, else the UTF-8 text.
   */
  end(bin: boolean): Uint8Array | string {
    const parts = this.#parts;
    const total = this.length;
    this.#parts = [];
    this.length = 0;
    this.active = false;
    const out = bin ? new Uint8Array(total) : Buffer.allocUnsafe(total);
    let at = 0;
    for (const part of parts) {
      out.set(part, at);
      at += part.length;
    }
    return bin ? out : utf8(out as Buffer, 0, total);
  }
}
