/**
 * The write phase of one value: the strategies' write hooks shape its
 * windows, the codec encodes it (a value it refuses is a `CodecError` naming
 * the key, the identity's label and the path inside the value), and the
 * envelope is built. A republication (`ctx.notModified()`) shapes the
 * header alone: the payload stays in Redis.
 *
 * @module
 */
import type { ResolvedCodec } from "../../codec/mod.ts";
import type { StoredEntry, WritePlan } from "../../contract.ts";
import { CodecError, isCodecError } from "../../errors.ts";
import type { Identity } from "../../types.ts";
import { type Stamp, token } from "../coherence/mod.ts";
import { encodeEnvelope } from "../read/mod.ts";

/** What shaping needs of its cache. */
export interface ShapeContext {
  readonly codec: ResolvedCodec;
  readonly negativeTtlMs: number;
  readonly maxValueBytes: number;
  /** The write phase: the strategies' write hooks, shaping `plan` in place. */
  write(plan: WritePlan): void;
  /** The pipeline's `label` option, to name an identity whose value the codec refused. */
  readonly label: ((identity: Identity) => string) | undefined;
}

/** A shaped value ready to store. */
export interface Stored {
  /** The envelope; a header alone for a republication. */
  readonly envelope: string | Uint8Array;
  readonly px: number;
  /** The fresh window it is stored with. */
  readonly freshMs: number;
  /** What the envelope says besides the value and the server's publication time. */
  readonly fields: Omit<StoredEntry, "value" | "publishedAt" | "size">;
}

/** What a value is stored with besides itself. */
export interface ShapeOptions {
  readonly ttlMs: number;
  readonly tags: readonly string[];
  readonly loadMs: number;
  readonly stamp: Stamp;
  readonly etag: string | undefined;
  /** Shape the header alone (a republication): nothing is encoded. */
  readonly headerOnly?: boolean;
}

/**
 * Shape `value` of `key`: windows from the write strategies, then the
 * envelope. Undefined when nothing is to be stored (a not-found with
 * negativeTtlMs 0).
 *
 * @throws {CodecError} when the codec refuses the value.
 * @throws {RangeError} when the encoded value is over maxValueBytes, or the write phase produced no TTL.
 */
export function shape(
  c: ShapeContext,
  key: string,
  value: unknown,
  o: ShapeOptions,
  identity: Identity,
): Stored | undefined {
  const negative = value === undefined && o.headerOnly !== true;
  if (negative && c.negativeTtlMs === 0) return undefined;
  const plan: WritePlan = {
    negative,
    freshMs: negative ? c.negativeTtlMs : o.ttlMs,
    staleMs: 0,
    ifErrorMs: 0,
    loadMs: o.loadMs,
  };
  if (!negative) c.write(plan);
  const px = plan.freshMs + plan.staleMs + plan.ifErrorMs;
  if (!Number.isInteger(px) || px <= 0 || plan.freshMs <= 0) {
    throw new RangeError(
      `Cannot publish ${key}: the write phase produced a TTL of ${px} ms (fresh ${plan.freshMs} ms)`,
    );
  }
  let payload: string | Uint8Array = "";
  let compressed = false;
  if (!negative && o.headerOnly !== true) {
    try {
      payload = c.codec.encode(value);
      const packed = c.codec.compress?.(payload);
      if (packed !== undefined) [payload, compressed] = [packed, true];
    } catch (error) {
      throw codecError(c, key, identity, error);
    }
  }
  // A string is sent as UTF-8: at most 3 bytes per UTF-16 code unit, so
  // only a string that might be over the limit is measured.
  if (payload.length * (typeof payload === "string" ? 3 : 1) > c.maxValueBytes) {
    const bytes = typeof payload === "string" ? utf8Length(payload) : payload.length;
    if (bytes > c.maxValueBytes) {
      throw new RangeError(
        `Cannot cache ${key}: the encoded value is ${bytes} bytes, over maxValueBytes (${c.maxValueBytes})`,
      );
    }
  }
  const fields = {
    negative,
    compressed,
    freshMs: plan.freshMs,
    staleMs: plan.staleMs,
    ifErrorMs: plan.ifErrorMs,
    loadMs: plan.loadMs,
    id: token(),
    epoch: o.stamp.epoch,
    codec: c.codec.id,
    etag: negative ? undefined : o.etag,
    tags: negative ? [] : o.tags,
    tagVersions: negative ? [] : o.stamp.tagVersions,
  };
  return { envelope: encodeEnvelope(fields, payload), px, freshMs: plan.freshMs, fields };
}

/** How an error names the value of `key`: by its key and, with a `label`, its identity's label. */
export function valueName(
  c: Pick<ShapeContext, "label">,
  key: string,
  identity: Identity,
): { name: string; label: string | undefined } {
  let label: string | undefined;
  try {
    label = c.label === undefined ? undefined : String(c.label(identity));
  } catch {
    // A label that throws must not hide the reason the error gives.
  }
  return { name: label === undefined ? key : `${label} (${key})`, label };
}

// A value the codec refused; the path inside the value comes from the codec.
function codecError(c: ShapeContext, key: string, identity: Identity, error: unknown): CodecError {
  const { name, label } = valueName(c, key, identity);
  const inner = isCodecError(error) ? error : undefined;
  const reason = error instanceof Error ? error.message : String(error);
  const message = `Cannot cache ${name}: the ${c.codec.name} codec cannot encode the loaded value (${reason})`;
  return new CodecError(message, {
    path: inner?.path ?? "$",
    key,
    ...(label === undefined ? {} : { label }),
    cause: error,
  });
}

/** The UTF-8 length of `text` (a lone surrogate counts 3 bytes, as its replacement character is sent). */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
