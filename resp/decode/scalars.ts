/**
 * Byte-level helpers of the RESP decoder: text from bytes, byte copies,
 * number parsing and map-key coercion. Internal; not re-exported.
 *
 * @module
 */
import { Buffer } from "node:buffer";

/** Node, Bun and Deno all ship the undocumented `utf8Slice(start, end)`. */
interface SliceBuffer extends Buffer {
  utf8Slice?(start: number, end: number): string;
  latin1Slice?(start: number, end: number): string;
}

const proto = Buffer.prototype as SliceBuffer;

/**
 * UTF-8 text of `buf[start, end)`; invalid sequences become U+FFFD.
 * `utf8Slice` skips `toString`'s argument checks: measured 1.4x faster on
 * 10-byte strings in Node 20 and 2x faster than TextDecoder; equal in Deno.
 */
export const utf8: (buf: Buffer, start: number, end: number) => string = typeof proto.utf8Slice === "function"
  ? (buf, start, end) => (buf as SliceBuffer).utf8Slice!(start, end)
  : (buf, start, end) => buf.toString("utf8", start, end);

/** Latin-1 text of `buf[start, end)`, for number text already known to be ASCII. */
export const latin1: (buf: Buffer, start: number, end: number) => string = typeof proto.latin1Slice === "function"
  ? (buf, start, end) => (buf as SliceBuffer).latin1Slice!(start, end)
  : (buf, start, end) => buf.toString("latin1", start, end);

/**
 * A fresh plain `Uint8Array` holding `buf[start, end)`. Never a view: a view
 * would keep the whole socket chunk alive and change when the caller reuses
 * the chunk. A plain `Uint8Array` (not a `Buffer`) is what Bun and Deno
 * users get too, so values compare equal on every runtime.
 */
export function copyBytes(buf: Buffer, start: number, end: number): Uint8Array {
  const n = end - start;
  if (n <= 64) {
    // Short values: a JS loop beats `set()` and its view allocation (2x in
    // Node 20, 3x in Bun for 10 bytes).
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = buf[start + i]!;
    return out;
  }
  // `slice()` of a plain view copies into a plain Uint8Array; `Buffer#slice`
  // would return a view instead.
  return new Uint8Array(buf.buffer, buf.byteOffset + start, n).slice();
}

/** A `Buffer` view over a plain `Uint8Array`'s memory (no copy). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * The key a RESP3 map stores a decoded key under. Redis only sends string
 * keys; other RESP3 types are legal and coerced with `String()`. Bytes (in
 * buffers mode) are read as UTF-8 rather than `String(bytes)` ("104,105").
 * A map or an array holding one has no `toString` (null prototype), so that
 * case falls back to a tag instead of throwing a TypeError out of `feed`.
 */
export function keyOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (value instanceof Uint8Array) return asBuffer(value).toString("utf8");
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

/**
 * An integer reply from its sign and decimal digits `text` (already
 * validated): a `number` when it is exact (|n| <= 2^53 - 1), else a `bigint`,
 * so int64 values near the limits never lose precision; `undefined` outside
 * the signed 64-bit range, which RESP calls invalid for `:` (Redis sends
 * larger numbers as `(` big numbers).
 */
export function bigInteger(negative: boolean, text: string): number | bigint | undefined {
  const big = negative ? -BigInt(text) : BigInt(text);
  if (big > INT64_MAX || big < INT64_MIN) return undefined;
  return big <= MAX_SAFE && big >= -MAX_SAFE ? Number(big) : big;
}
