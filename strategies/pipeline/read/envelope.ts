/**
 * The envelope around every stored value: an ASCII header, then the codec's
 * payload (binary safe):
 *
 * ```
 * hl3;<v|n|z>;<publishedAt>;<freshMs>;<staleMs>;<ifErrorMs>;<loadMs>;<id>;<epoch>;<codec>;<etag>;<tags>;<payload>
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
 * `id` is unique per publication (a re-read tells a new value from the one
 * it saw); `epoch` is the namespace epoch and `tags` the `name=version`
 * pairs (names percent-encoded) the value was written under: a value whose
 * epoch or tag versions are no longer current is a miss. `codec` names the
 * codec that wrote the payload: a cache reading with another codec takes
 * the entry for a miss (a decode error naming both) instead of a value of
 * the wrong type. `etag` (percent-encoded, may be empty) is the loader's
 * validator for a conditional refresh.
 *
 * Every field has a bound, here, that the read side enforces and the write
 * side checks at the call (a RangeError naming the setting): what is written
 * can always be read. The version prefix keeps formats apart: an entry of
 * another version (an older `hl2;`) or anything that does not parse is a
 * miss that the next fill overwrites.
 *
 * @module
 */
import type { StoredEntry } from "../../contract.ts";
import { MAX_CODEC_NAME_CHARS, MAX_ETAG_CHARS, MAX_TAG_CHARS, MAX_TAGS } from "../../limits.ts";

/** What a stored envelope says: a stored entry's fields, with the payload still encoded. */
export interface Envelope extends Omit<StoredEntry, "value" | "size"> {
  /** The payload is deflated (kind `z`); absent means false. */
  readonly compressed?: boolean;
  /** The name of the codec that encoded the payload. */
  readonly codec: string;
  /** The codec's payload (empty for a negative marker). */
  readonly payload: Uint8Array | string;
}

/** What the client writes; `publishedAt` is stamped by the server. */
export type EnvelopeFields = Omit<Envelope, "publishedAt" | "payload">;

/** The codec a reader decodes with: its name (checked against the envelope's) and its functions. */
export interface EnvelopeCodec {
  readonly name: string;
  decode(payload: Uint8Array | string): unknown;
  /** `compressed()` only: a deflated payload inflated. */
  readonly inflate?: (payload: Uint8Array) => Uint8Array;
}

/** The longest id or version token read, in characters (ours are 12). */
const MAX_TOKEN_CHARS = 64;
/** What percent-encoding makes of one UTF-16 unit at most: a unit of a three-byte character, `%E2%82%AC`. */
const ENCODED = 9;
/** The longest tags field read: every tag at its longest, percent-encoded, with its version. */
const MAX_TAGS_FIELD = MAX_TAGS * (ENCODED * MAX_TAG_CHARS + 1 + MAX_TOKEN_CHARS + 1);
/** The longest header read: past it, bytes are not searched for its end. */
const MAX_HEADER = 64 + 5 * 16 + 2 * MAX_TOKEN_CHARS + MAX_CODEC_NAME_CHARS + ENCODED * MAX_ETAG_CHARS + MAX_TAGS_FIELD;

/** Byte offset of the 13-digit `publishedAt` placeholder the publishing script overwrites. */
export const PUBLISHED_AT_OFFSET = 6;
/** Digits `loadMs` is padded to, so the publishing script can raise it in place. */
export const LOAD_MS_DIGITS = 7;
const LOAD_MS_PAD = "0".repeat(LOAD_MS_DIGITS);
const PLACEHOLDER = "0000000000000";
const NONE: readonly string[] = Object.freeze([]);
const encoder = new TextEncoder();
const latin1 = new TextDecoder("latin1");

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
  const kind = fields.negative ? "n" : fields.compressed === true ? "z" : "v";
  const etag = fields.etag === undefined ? "" : encodeURIComponent(fields.etag);
  const header = `hl3;${kind};${PLACEHOLDER};${fields.freshMs};${fields.staleMs};${fields.ifErrorMs};` +
    `${padded(fields.loadMs)};${fields.id};${fields.epoch};${fields.codec};${etag};${tags};`;
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

/** A header as read: a stored entry without its value yet, and where its payload starts. */
interface Header {
  value: unknown;
  readonly negative: boolean;
  readonly compressed: boolean;
  readonly publishedAt: number;
  readonly freshMs: number;
  readonly staleMs: number;
  readonly ifErrorMs: number;
  readonly loadMs: number;
  readonly id: string;
  readonly epoch: string;
  readonly codec: string;
  readonly etag: string | undefined;
  readonly tags: readonly string[];
  readonly tagVersions: readonly string[];
  size: number;
  /** Where the payload starts, in the text or the bytes (the header is ASCII: the same offset). */
  readonly payloadAt: number;
}

// Character codes: "hl3;", the kinds, ";", digits.
const H = 104, L = 108, THREE = 51, SEMI = 59, V = 118, N = 110, Z = 122, ZERO = 48, NINE = 57;

function refuse(raw: Uint8Array | string): never {
  const start = typeof raw === "string" ? raw.slice(0, 12) : latin1.decode(raw.subarray(0, 12));
  if (/^hl\d;/.test(start) && !start.startsWith("hl3;")) {
    throw new Error(`an envelope of another format (${JSON.stringify(start.slice(0, 4))}; this version reads "hl3;")`);
  }
  throw new Error(`not a herdless envelope (starts with ${JSON.stringify(start)})`);
}

/**
 * Read the header of `text` (the whole stored string, or the header of
 * stored bytes as latin1): one pass, no copy of the payload. Every field
 * is checked against its bound; anything else is refused.
 */
function readHeader(text: string, raw: Uint8Array | string): Header {
  if (
    text.charCodeAt(0) !== H || text.charCodeAt(1) !== L || text.charCodeAt(2) !== THREE ||
    text.charCodeAt(3) !== SEMI
  ) refuse(raw);
  const kind = text.charCodeAt(4);
  if ((kind !== V && kind !== N && kind !== Z) || text.charCodeAt(5) !== SEMI) refuse(raw);
  // publishedAt: exactly 13 digits, the width the script writes in place.
  let i = PUBLISHED_AT_OFFSET;
  let publishedAt = 0;
  for (; i < PUBLISHED_AT_OFFSET + 13; i++) {
    const c = text.charCodeAt(i);
    if (!(c >= ZERO && c <= NINE)) refuse(raw);
    publishedAt = publishedAt * 10 + (c - ZERO);
  }
  if (text.charCodeAt(i++) !== SEMI) refuse(raw);
  // Three windows and loadMs: 1 to 15 digits each (15 stay below 2^53: exact).
  const freshMs = decimal(text, i, raw);
  const staleMs = decimal(text, next, raw);
  const ifErrorMs = decimal(text, next, raw);
  const loadMs = decimal(text, next, raw);
  i = next;
  const idEnd = fieldEnd(text, i, MAX_TOKEN_CHARS, raw);
  const epochEnd = fieldEnd(text, idEnd + 1, MAX_TOKEN_CHARS, raw);
  const codecEnd = fieldEnd(text, epochEnd + 1, MAX_CODEC_NAME_CHARS, raw);
  const etagEnd = fieldEnd(text, codecEnd + 1, ENCODED * MAX_ETAG_CHARS, raw);
  const tagsEnd = fieldEnd(text, etagEnd + 1, MAX_TAGS_FIELD, raw);
  if (idEnd === i || codecEnd === epochEnd + 1) refuse(raw);
  const { tags, tagVersions } = tagsEnd > etagEnd + 1 ? readTags(text.slice(etagEnd + 1, tagsEnd), raw) : NO_TAGS;
  return {
    value: undefined,
    negative: kind === N,
    compressed: kind === Z,
    publishedAt,
    freshMs,
    staleMs,
    ifErrorMs,
    loadMs,
    id: text.slice(i, idEnd),
    epoch: text.slice(idEnd + 1, epochEnd),
    codec: text.slice(epochEnd + 1, codecEnd),
    etag: etagEnd === codecEnd + 1 ? undefined : decodeURIComponent(text.slice(codecEnd + 1, etagEnd)),
    tags,
    tagVersions,
    size: raw.length,
    payloadAt: tagsEnd + 1,
  };
}

/** Where the field after the last {@linkcode decimal} starts (past its ";"). */
let next = 0;

/** The decimal field at `start`: 1 to 15 digits, then ";" (set {@linkcode next} past it); refused otherwise. */
function decimal(text: string, start: number, raw: Uint8Array | string): number {
  let value = 0;
  let i = start;
  for (; i - start <= 15; i++) {
    const c = text.charCodeAt(i);
    // NaN past the end fails both comparisons: the loop stops there too.
    if (!(c >= ZERO && c <= NINE)) break;
    value = value * 10 + (c - ZERO);
  }
  if (i === start || i - start > 15 || text.charCodeAt(i) !== SEMI) refuse(raw);
  next = i + 1;
  return value;
}

/** The `;` ending the field that starts at `start`, at most `max` characters on; refused past it. */
function fieldEnd(text: string, start: number, max: number, raw: Uint8Array | string): number {
  const end = text.indexOf(";", start);
  if (end < 0 || end - start > max) refuse(raw);
  return end;
}

const NO_TAGS = Object.freeze({ tags: NONE, tagVersions: NONE });

// The `name=version` pairs of an envelope's tag field (names URI-encoded).
function readTags(field: string, raw: Uint8Array | string): { tags: string[]; tagVersions: string[] } {
  const tags: string[] = [];
  const tagVersions: string[] = [];
  for (const pair of field.split(",")) {
    const eq = pair.indexOf("=");
    if (eq <= 0 || tags.length === MAX_TAGS) refuse(raw);
    tags.push(decodeURIComponent(pair.slice(0, eq)));
    tagVersions.push(pair.slice(eq + 1));
  }
  return { tags, tagVersions };
}

// The header of stored bytes, as latin1 text: up to the 12th ";" (a binary
// codec's payload follows it; it is never searched).
function headerOf(raw: Uint8Array): string {
  let semis = 0;
  const limit = Math.min(raw.length, MAX_HEADER);
  for (let i = 0; i < limit; i++) {
    if (raw[i] === SEMI && ++semis === 12) return latin1.decode(raw.subarray(0, i + 1));
  }
  refuse(raw);
}

/**
 * Parse a stored value. The header is read in place, from the text or from
 * the bytes as they came: no copy and no decoding of the payload.
 *
 * @throws {Error} describing why it is not an envelope this version reads.
 */
export function decodeEnvelope(raw: Uint8Array | string): Envelope {
  const h = readHeader(typeof raw === "string" ? raw : headerOf(raw), raw);
  const payload = typeof raw === "string" ? raw.slice(h.payloadAt) : raw.subarray(h.payloadAt);
  if (h.negative && payload.length !== 0) throw new Error("a not-found marker carries a payload");
  return {
    negative: h.negative,
    ...(h.compressed ? { compressed: true } : {}),
    publishedAt: h.publishedAt,
    freshMs: h.freshMs,
    staleMs: h.staleMs,
    ifErrorMs: h.ifErrorMs,
    loadMs: h.loadMs,
    id: h.id,
    epoch: h.epoch,
    codec: h.codec,
    etag: h.etag,
    tags: h.tags,
    tagVersions: h.tagVersions,
    payload,
  };
}

/**
 * Parse a stored value straight into the entry a reader keeps, its payload
 * decoded by `codec` (not for a not-found marker): one object per read.
 * An entry another codec wrote is refused, naming both: it would decode to a
 * value of another type, or not at all.
 *
 * @throws {Error} describing why it is not an envelope this cache reads, or what the codec threw.
 */
export function decodeStored(raw: Uint8Array | string, codec: EnvelopeCodec): StoredEntry {
  // Text is what every text codec's hit reads: the header is read in the
  // string itself and the payload is a slice of it, decoded once.
  const h = readHeader(typeof raw === "string" ? raw : headerOf(raw), raw);
  if (h.negative) {
    if (h.payloadAt !== raw.length) throw new Error("a not-found marker carries a payload");
    return h;
  }
  if (h.codec !== codec.name) {
    throw new Error(`written by the ${h.codec} codec, and this cache reads with the ${codec.name} codec`);
  }
  if (typeof raw === "string") {
    h.value = codec.decode(raw.slice(h.payloadAt));
    return h;
  }
  let payload = raw.subarray(h.payloadAt);
  if (h.compressed) {
    if (codec.inflate === undefined) throw new Error("a compressed value, and this cache's codec is not compressed()");
    payload = codec.inflate(payload);
    // Decoded size: a near tier counts what an inflated value holds in memory.
    h.size = h.payloadAt + payload.length;
  }
  h.value = codec.decode(payload);
  return h;
}
