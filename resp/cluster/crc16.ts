/**
 * Redis Cluster key slots: CRC16 (XMODEM: polynomial 0x1021, initial value
 * 0) of the key, or of its hash tag, modulo 16384.
 *
 * @module
 */
import type { Arg } from "../types.ts";

/** Number of hash slots in a Redis Cluster. */
export const SLOTS = 16384;

const TABLE = /* @__PURE__ */ (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

const OPEN = 123; // {
const CLOSE = 125; // }
const encoder = new TextEncoder();

/** CRC16/XMODEM of `bytes[from, to)`. */
export function crc16(bytes: Uint8Array, from = 0, to = bytes.length): number {
  let crc = 0;
  for (let i = from; i < to; i++) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ bytes[i]!) & 0xff]!;
  return crc;
}

/**
 * The slot of a key. Only the part between the first `{` and the first `}`
 * after it is hashed when that part is non-empty (a hash tag), so
 * `{user1}:a` and `{user1}:b` share a slot; `a{}b` hashes whole.
 */
export function keySlot(key: Arg): number {
  if (typeof key === "string") return stringSlot(key);
  if (typeof key === "number") return stringSlot(String(key));
  return bytesSlot(key);
}

function bytesSlot(bytes: Uint8Array): number {
  const n = bytes.length;
  let from = 0;
  let to = n;
  const open = bytes.indexOf(OPEN);
  if (open !== -1) {
    const close = bytes.indexOf(CLOSE, open + 1);
    if (close > open + 1) {
      from = open + 1;
      to = close;
    }
  }
  return crc16(bytes, from, to) & (SLOTS - 1);
}

// Keys are almost always short ASCII: hash their char codes directly instead
// of encoding to UTF-8 first. `{` and `}` are ASCII, so finding the tag on
// UTF-16 units gives the same bytes as finding it on the UTF-8 encoding.
function stringSlot(key: string): number {
  let from = 0;
  let to = key.length;
  const open = key.indexOf("{");
  if (open !== -1) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) {
      from = open + 1;
      to = close;
    }
  }
  let crc = 0;
  for (let i = from; i < to; i++) {
    const c = key.charCodeAt(i);
    if (c >= 0x80) return crc16(encoder.encode(key.slice(from, to))) & (SLOTS - 1);
    crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ c) & 0xff]!;
  }
  return crc & (SLOTS - 1);
}
