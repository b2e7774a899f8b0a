/**
 * The envelope around every stored value: an ASCII header, then the codec's
 * payload (binary safe):
 *
 * ```
 * hl2;<v|n>;<publishedAt>;<freshMs>;<staleMs>;<ifErrorMs>;<loadMs>;<id>;<epoch>;<tags>;<payload>
 * ```
 *
 * `v` marks a value, `n` a "not found" marker (empty payload), `z` a value
 * whose payload is deflated (`compressed()`; the flag lives here, never in
 * the payload, so no stored string or bytes can pass for compressed data).
 * `publishedAt` is 13 decimal digits of the server's own clock in ms: the
 * client writes zeros there and the publishing script overwrites them with
 * the server's `TIME` in the same atomic step, so a reader compares it with
 * its estimate of that server's clock and never with another machine's. The
 * windows are durations. `loadMs` runs from the origin call to the
 * publication on the server: the client writes the load's own duration,
 * zero-padded to 7 digits so that the script can raise it in place to the
 * time since the load began (the client's estimate of the server's clock
 * then) when the write arrived late. `publishedAt - loadMs` is then when the
 * load began, however long the write took to get there (see `unstored.ts`).
 * Any width parses. `id` is unique per publication (a re-read tells a new
 * value from the one it saw); `epoch` is the namespace epoch and `tags` the
 * `name=version` pairs (names percent-encoded) the value was written under:
 * a value whose epoch or tag versions are no longer current is a miss. The
 * version prefix lets a future format coexist: anything that does not parse
 * is a miss that the next fill overwrites.
 *
 * @module
 */
import type { StoredEntry } from "../../contract.ts";

/** What a stored envelope says: a stored entry's fields, with the payload still encoded. */
export interface Envelope extends Omit<StoredEntry, "value" | "size"> {
  /** The payload is deflated (kind `z`); absent means false. */
  readonly compressed?: boolean;
  /** The codec's payload (empty for a negative marker). */
  readonly payload: Uint8Array | string;
}

/** What the client writes; `publishedAt` is stamped by the server. */
export type EnvelopeFields = Omit<Envelope, "publishedAt" | "payload">;

/** Byte offset of the 13-digit `publishedAt` placeholder the publishing script overwrites. */
export const PUBLISHED_AT_OFFSET = 6;
/** Digits `loadMs` is padded to, so the publishing script can raise it in place. */
export const LOAD_MS_DIGITS = 7;
const LOAD_MS_PAD = "0".repeat(LOAD_MS_DIGITS);
const PLACEHOLDER = "0000000000000";
const NONE: readonly string[] = Object.freeze([]);
const encoder = new TextEncoder();

/**
 * Build the stored form: a string when the payload is text (the client sends
 * it as UTF-8), bytes when it is binary.
 *
 * @throws {TypeError} when the payload is neither a string nor a Uint8Array (a custom codec's bug).
 */
export function encodeEnvelope(fields: EnvelopeFields, payload: string | Uint8Array): string | Uint8Array {
  let tags = "";
  for (let i = 0; i < fields.tags.length; i++) {
    tags += `${i === 0 ? "" : ","}${encodeURIComponent(fields.tags[i]!)}=${fields.tagVersions[i]}`;
  }
  const header =
    `hl2;${
      fields.negative ? "n" : fields.compressed === true ? "z" : "v"
    };${PLACEHOLDER};${fields.freshMs};${fields.staleMs};${fields.ifErrorMs};` +
    `${padded(fields.loadMs)};${fields.id};${fields.epoch};${tags};`;
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
 * Byte offset of the `loadMs` field in the envelope of `fields`, or -1 when
 * it is wider than {@linkcode LOAD_MS_DIGITS} (a load of hours: nothing to raise in place).
 */
export function loadMsOffset(fields: Pick<EnvelopeFields, "freshMs" | "staleMs" | "ifErrorMs" | "loadMs">): number {
  if (fields.loadMs >= 10 ** LOAD_MS_DIGITS) return -1;
  // The header is ASCII: its characters and bytes are at the same offsets.
  return PUBLISHED_AT_OFFSET + 14 + `${fields.freshMs};${fields.staleMs};${fields.ifErrorMs};`.length;
}

function padded(loadMs: number): string {
  const digits = String(loadMs);
  return digits.length >= LOAD_MS_DIGITS ? digits : LOAD_MS_PAD.slice(digits.length) + digits;
}

// Character codes of the header: "hl2;", "v" or "n", ";", digits.
const H = 104, L = 108, TWO = 50, SEMI = 59, V = 118, N = 110, Z = 122, ZERO = 48, NINE = 57;

// The header is ASCII, so a character code of the text and a byte of the
// bytes are the same thing at the same index; -1 past the end.
function codeAt(raw: Uint8Array | string, i: number): number {
  if (i >= raw.length) return -1;
  return typeof raw === "string" ? raw.charCodeAt(i) : raw[i]!;
}

/** Where the last {@linkcode field} or {@linkcode text} ended (past its ";"). */
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

/** The ASCII field at `start` up to the next ";" (at most 4096 characters), or undefined. */
function text(raw: Uint8Array | string, start: number): string | undefined {
  const limit = Math.min(raw.length, start + 4096);
  if (typeof raw === "string") {
    const end = raw.indexOf(";", start);
    if (end < 0 || end > limit) return undefined;
    fieldEnd = end + 1;
    return raw.slice(start, end);
  }
  for (let i = start; i < limit; i++) {
    if (raw[i] === SEMI) {
      fieldEnd = i + 1;
      return String.fromCharCode(...raw.subarray(start, i));
    }
  }
  return undefined;
}

const NO_TAGS = Object.freeze({ tags: NONE, tagVersions: NONE });

// The `name=version` pairs of an envelope's tag field (names URI-encoded),
// the same in the byte and the text envelope.
function parseTags(field: string, raw: Uint8Array | string): { tags: string[]; tagVersions: string[] } {
  const tags: string[] = [];
  const tagVersions: string[] = [];
  for (const pair of field.split(",")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) refuse(raw);
    tags.push(decodeURIComponent(pair.slice(0, eq)));
    tagVersions.push(pair.slice(eq + 1));
  }
  return { tags, tagVersions };
}

function refuse(raw: Uint8Array | string): never {
  const start = typeof raw === "string" ? raw.slice(0, 12) : String.fromCharCode(...raw.subarray(0, 12));
  throw new Error(`not a herdless envelope (starts with ${JSON.stringify(start)})`);
}

/**
 * Parse a stored value. The header is read in place, from the text or from
 * the bytes as they came: no copy and no decoding of the payload.
 *
 * @throws {Error} describing why it is not an envelope this version reads.
 */
export function decodeEnvelope(raw: Uint8Array | string): Envelope {
  if (typeof raw === "string") {
    const { value, size: _, ...fields } = decodeText(raw, asIs);
    return { ...fields, payload: fields.negative ? "" : value as string };
  }
  if (codeAt(raw, 0) !== H || codeAt(raw, 1) !== L || codeAt(raw, 2) !== TWO || codeAt(raw, 3) !== SEMI) refuse(raw);
  const kind = codeAt(raw, 4);
  if ((kind !== V && kind !== N && kind !== Z) || codeAt(raw, 5) !== SEMI) refuse(raw);
  const publishedAt = field(raw, PUBLISHED_AT_OFFSET);
  if (publishedAt < 0 || fieldEnd !== PUBLISHED_AT_OFFSET + 14) refuse(raw);
  const freshMs = field(raw, fieldEnd);
  const staleMs = freshMs < 0 ? -1 : field(raw, fieldEnd);
  const ifErrorMs = staleMs < 0 ? -1 : field(raw, fieldEnd);
  const loadMs = ifErrorMs < 0 ? -1 : field(raw, fieldEnd);
  if (loadMs < 0) refuse(raw);
  const id = text(raw, fieldEnd);
  const epoch = id === undefined ? undefined : text(raw, fieldEnd);
  const tagText = epoch === undefined ? undefined : text(raw, fieldEnd);
  if (tagText === undefined || id === "") refuse(raw);
  const { tags, tagVersions } = tagText === "" ? NO_TAGS : parseTags(tagText, raw);
  const negative = kind === N;
  // A view, not a copy: the codec keeps it as is.
  const payload = raw.subarray(fieldEnd);
  if (negative && payload.length !== 0) throw new Error("a not-found marker carries a payload");
  return {
    negative,
    ...(kind === Z ? { compressed: true } : {}),
    publishedAt,
    freshMs,
    staleMs,
    ifErrorMs,
    loadMs,
    id: id!,
    epoch: epoch!,
    tags,
    tagVersions,
    payload,
  };
}

/** The decimal field at `start` of text (1 to 15 digits, then ";"): its value, and its end in `fieldEnd`; or -1. */
function digits(raw: string, start: number): number {
  let value = 0;
  let i = start;
  const max = start + 15;
  for (; i <= max; i++) {
    const c = raw.charCodeAt(i);
    // NaN past the end fails both comparisons: the loop stops there too.
    if (!(c >= ZERO && c <= NINE)) break;
    value = value * 10 + (c - ZERO);
  }
  if (i === start || i > max || raw.charCodeAt(i) !== SEMI) return -1;
  fieldEnd = i + 1;
  return value;
}

/** The text field at `start` up to the next ";" (at most 4096 characters): its end, or -1. */
function semicolon(raw: string, start: number): number {
  const end = raw.indexOf(";", start);
  return end < 0 || end > start + 4096 ? -1 : end;
}

const asIs = (payload: string) => payload;

/**
 * Parse a stored value straight into the entry a reader keeps, its payload
 * decoded by `decodePayload` (not called for a not-found marker): one object
 * per read, no intermediate envelope.
 *
 * @throws {Error} describing why it is not an envelope this version reads, or what `decodePayload` threw.
 */
export function decodeStored(
  raw: Uint8Array | string,
  decodePayload: (payload: Uint8Array | string) => unknown,
  inflate?: (payload: Uint8Array) => Uint8Array,
): StoredEntry {
  // Text is what every text codec's hit reads: its own path, one character
  // access per header byte and no dispatch on the type in the loops.
  if (typeof raw === "string") return decodeText(raw, decodePayload);
  const e = decodeEnvelope(raw);
  let payload = e.payload;
  if (e.compressed === true) {
    if (inflate === undefined) throw new Error("a compressed value, and this cache's codec is not compressed()");
    payload = inflate(payload as Uint8Array);
  }
  return {
    value: e.negative ? undefined : decodePayload(payload),
    negative: e.negative,
    publishedAt: e.publishedAt,
    freshMs: e.freshMs,
    staleMs: e.staleMs,
    ifErrorMs: e.ifErrorMs,
    loadMs: e.loadMs,
    id: e.id,
    epoch: e.epoch,
    tags: e.tags,
    tagVersions: e.tagVersions,
    // Decoded size: a near tier counts what an inflated value holds in memory.
    size: raw.length - e.payload.length + payload.length,
  };
}

// decodeEnvelope for text: the same rules, read with charCodeAt and indexOf.
function decodeText(raw: string, decodePayload: (payload: string) => unknown): StoredEntry {
  if (
    raw.charCodeAt(0) !== H || raw.charCodeAt(1) !== L || raw.charCodeAt(2) !== TWO || raw.charCodeAt(3) !== SEMI
  ) refuse(raw);
  const kind = raw.charCodeAt(4);
  if ((kind !== V && kind !== N) || raw.charCodeAt(5) !== SEMI) refuse(raw);
  const publishedAt = digits(raw, PUBLISHED_AT_OFFSET);
  if (publishedAt < 0 || fieldEnd !== PUBLISHED_AT_OFFSET + 14) refuse(raw);
  const freshMs = digits(raw, fieldEnd);
  const staleMs = freshMs < 0 ? -1 : digits(raw, fieldEnd);
  const ifErrorMs = staleMs < 0 ? -1 : digits(raw, fieldEnd);
  const loadMs = ifErrorMs < 0 ? -1 : digits(raw, fieldEnd);
  if (loadMs < 0) refuse(raw);
  const idStart = fieldEnd;
  const idEnd = semicolon(raw, idStart);
  const epochEnd = idEnd < 0 ? -1 : semicolon(raw, idEnd + 1);
  const tagsEnd = epochEnd < 0 ? -1 : semicolon(raw, epochEnd + 1);
  if (tagsEnd < 0 || idEnd === idStart) refuse(raw);
  const { tags, tagVersions } = tagsEnd > epochEnd + 1 ? parseTags(raw.slice(epochEnd + 1, tagsEnd), raw) : NO_TAGS;
  const negative = kind === N;
  if (negative && tagsEnd + 1 !== raw.length) throw new Error("a not-found marker carries a payload");
  return {
    // A view, not a copy, that the codec decodes once.
    value: negative ? undefined : decodePayload(raw.slice(tagsEnd + 1)),
    negative,
    publishedAt,
    freshMs,
    staleMs,
    ifErrorMs,
    loadMs,
    id: raw.slice(idStart, idEnd),
    epoch: raw.slice(idEnd + 1, epochEnd),
    tags,
    tagVersions,
    size: raw.length,
  };
}
