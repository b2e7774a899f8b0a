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

const HEADER = /^hl1;([vn]);(\d{1,15});(\d{1,15});(\d{1,15});/;
// Longest header: "hl1;v;" + 3 x (15 digits + ";").
const MAX_HEADER = 6 + 3 * 16;
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

/**
 * Parse a stored value.
 *
 * @throws {Error} describing why it is not an envelope this version reads.
 */
export function decodeEnvelope(raw: Uint8Array | string): Envelope {
  const prefix = typeof raw === "string"
    ? raw.slice(0, MAX_HEADER)
    : String.fromCharCode(...raw.subarray(0, MAX_HEADER));
  const m = HEADER.exec(prefix);
  if (m === null) {
    throw new Error(`not a herdless envelope (starts with ${JSON.stringify(prefix.slice(0, 12))})`);
  }
  const negative = m[1] === "n";
  // The header is ASCII, so its length in characters is its length in bytes.
  // A view, not a copy: the codec copies (bytes) or decodes (text) it once.
  const payload = typeof raw === "string" ? raw.slice(m[0].length) : raw.subarray(m[0].length);
  if (negative && payload.length !== 0) throw new Error("a not-found marker carries a payload");
  return { negative, staleMs: Number(m[2]), ifErrorMs: Number(m[3]), loadMs: Number(m[4]), payload };
}
