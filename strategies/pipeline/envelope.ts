/**
 * The envelope around every stored value: an ASCII header, then the codec's
 * payload (binary safe):
 *
 * ```
 * hl1;<v|n>;<staleMs>;<ifErrorMs>;<loadMs>;<payload>
 * ```
 *
 * `v` marks a value, `n` a "not found" marker (empty payload). Only durations
 * are stored, never timestamps: the read phase derives every deadline from
 * the key's server-side PTTL, so clocks never have to agree. The version
 * prefix lets a future format coexist: anything that does not parse is a miss
 * that the next fill overwrites.
 *
 * @module
 */

/** The windows and payload of a stored envelope. */
export interface Envelope {
  readonly negative: boolean;
  readonly staleMs: number;
  readonly ifErrorMs: number;
  readonly loadMs: number;
  /** The codec's payload (empty for a negative marker). */
  readonly payload: Uint8Array | string;
}

const encoder = new TextEncoder();

/**
 * Build the stored form: a string when the payload is text (the client sends
 * it as UTF-8), bytes when it is binary.
 *
 * @throws {TypeError} when the payload is neither a string nor a Uint8Array (a custom codec's bug).
 */
export function encodeEnvelope(
  windows: { negative: boolean; staleMs: number; ifErrorMs: number; loadMs: number },
  payload: string | Uint8Array,
): string | Uint8Array {
  const header = `hl1;${windows.negative ? "n" : "v"};${windows.staleMs};${windows.ifErrorMs};${windows.loadMs};`;
  if (typeof payload === "string") return header + payload;
  if (!(payload instanceof Uint8Array)) {
    throw new TypeError(`the codec's encode must return a string or a Uint8Array, got ${typeof payload}`);
  }
  const head = encoder.encode(header);
  const out = new Uint8Array(head.length + payload.length);
  out.set(head, 0);
  out.set(payload, head.length);
  return out;
}

// Character codes of the header: "hl1;", "v" or "n", ";", digits.
const H = 104, L = 108, ONE = 49, SEMI = 59, V = 118, N = 110, ZERO = 48, NINE = 57;

// The header is ASCII, so a character code of the text and a byte of the
// bytes are the same thing at the same index; -1 past the end.
function codeAt(raw: Uint8Array | string, i: number): number {
  if (i >= raw.length) return -1;
  return typeof raw === "string" ? raw.charCodeAt(i) : raw[i]!;
}

/** Where the last {@linkcode field} ended (past its ";"). */
let fieldEnd = 0;

/** The decimal field at `start` (1 to 15 digits, then ";"), or -1. */
function field(raw: Uint8Array | string, start: number): number {
  let value = 0;
  let i = start;
  for (; i <= start + 15; i++) {
    const c = codeAt(raw, i);
    if (c < ZERO || c > NINE) break;
    value = value * 10 + (c - ZERO);
  }
  // 15 digits stay below 2^53: every value is exact.
  if (i === start || i - start > 15 || codeAt(raw, i) !== SEMI) return -1;
  fieldEnd = i + 1;
  return value;
}

function refuse(raw: Uint8Array | string): never {
  const start = typeof raw === "string" ? raw.slice(0, 12) : String.fromCharCode(...raw.subarray(0, 12));
  throw new Error(`not a herdless envelope (starts with ${JSON.stringify(start)})`);
}

/**
 * Parse a stored value. The header is read in place, from the text or from
 * the bytes as they came: no copy and no decoding of either on a hit.
 *
 * @throws {Error} describing why it is not an envelope this version reads.
 */
export function decodeEnvelope(raw: Uint8Array | string): Envelope {
  if (codeAt(raw, 0) !== H || codeAt(raw, 1) !== L || codeAt(raw, 2) !== ONE || codeAt(raw, 3) !== SEMI) refuse(raw);
  const kind = codeAt(raw, 4);
  if ((kind !== V && kind !== N) || codeAt(raw, 5) !== SEMI) refuse(raw);
  const staleMs = field(raw, 6);
  const ifErrorMs = staleMs < 0 ? -1 : field(raw, fieldEnd);
  const loadMs = ifErrorMs < 0 ? -1 : field(raw, fieldEnd);
  if (loadMs < 0) refuse(raw);
  const negative = kind === N;
  // A view, not a copy: the codec decodes (text) or keeps (bytes) it once.
  const payload = typeof raw === "string" ? raw.slice(fieldEnd) : raw.subarray(fieldEnd);
  if (negative && payload.length !== 0) throw new Error("a not-found marker carries a payload");
  return { negative, staleMs, ifErrorMs, loadMs, payload };
}
