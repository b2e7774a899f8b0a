/**
 * `compressed()`: a codec wrapper that stores large values deflated. The
 * envelope records which values are (its kind `z`), so no plain string or
 * bytes value can ever be taken for a compressed one, and values written
 * without `compressed()` read back unchanged.
 *
 * Deflate (raw, level 6) was picked from `npm run bench:compression`: on 1 KB,
 * 10 KB and 100 KB JSON it had the cheapest hit (inflate + parse) of the
 * candidates, within 5-10% of brotli's size (docs/codecs.md has the figures).
 * Codecs are synchronous, so `CompressionStream` does not fit; node:zlib's
 * `*Sync` functions exist on Node, Bun, Deno and workerd (nodejs_compat).
 *
 * @module
 */
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { checkedOptions, intInRange, nonNegativeInt } from "../../resp/shared/mod.ts";
import { type Codec, type CodecOption, COMPRESSION, resolveCodec, type ResolvedCodec } from "./codec.ts";

/** Options of {@linkcode compressed}. */
export interface CompressedOptions {
  /**
   * Values whose encoding is at least this many bytes are compressed (and
   * stored so only if that makes them smaller); smaller ones are stored as
   * they are, where compression costs more than it saves.
   *
   * @default {1024}
   */
  minBytes?: number;
  /**
   * The most bytes a stored value may inflate to. Inflating is synchronous
   * and its output is what a forged entry controls (1 MB of deflate data can
   * stand for 1 GB): inflation stops here, and the value is a miss (a
   * `decode-error` event naming this setting) that the next load
   * overwrites. Inflating runs at about 6.5 ms per MB at worst on a shared
   * 2-core machine, so the default bounds what one forged entry costs to
   * about 50 ms of a blocked event loop and 8 MiB of memory, whatever it
   * claims. A value whose encoding is larger than this is stored as it is
   * (up to the pipeline's `maxValueBytes`), so every value written can be read.
   * At most 1 GiB.
   *
   * @default {8388608} (8 MiB)
   */
  maxInflatedBytes?: number;
}

const COMPRESSED_OPTIONS = Object.keys(
  { minBytes: true, maxInflatedBytes: true } satisfies Record<keyof CompressedOptions, true>,
);

const encoder = new TextEncoder();

/** The default {@linkcode CompressedOptions.maxInflatedBytes}: 8 MiB. */
export const MAX_INFLATED_BYTES = 8 * 1024 * 1024;

/**
 * Deflate `payload` when it is `minBytes` to `maxBytes` long and shrinks;
 * `undefined` to store it as it is. Over `maxBytes` it would not inflate
 * back under the read's cap: stored plain, it stays readable.
 */
export function deflate(payload: string | Uint8Array, minBytes: number, maxBytes: number): Uint8Array | undefined {
  // A string's UTF-8 length is between its length and three times it: only
  // the undecided ones are encoded before compression would encode them anyway.
  if (typeof payload === "string" && (payload.length * 3 < minBytes || payload.length > maxBytes)) return undefined;
  const bytes = typeof payload === "string" ? encoder.encode(payload) : payload;
  if (bytes.length < minBytes || bytes.length > maxBytes || bytes.length === 0) return undefined;
  const packed = deflateRawSync(bytes);
  return packed.length < bytes.length ? packed : undefined;
}

/**
 * Inflate a compressed payload to at most `maxBytes` bytes: zlib stops
 * there, so a forged payload costs no more time or memory than a genuine
 * value of that size.
 *
 * @throws {RangeError} when it would inflate past `maxBytes`, naming the setting.
 * @throws {Error} when it is not valid deflate data (a corrupt value: the read counts a decode error).
 */
export function inflate(payload: Uint8Array, maxBytes: number): Uint8Array {
  try {
    return inflateRawSync(payload, { maxOutputLength: maxBytes });
  } catch (error) {
    // Node, Bun and Deno say ERR_BUFFER_TOO_LARGE, workerd a bare
    // RangeError: the class is what they share. Corrupt data is a plain Error.
    if (!(error instanceof RangeError)) throw error;
    throw new RangeError(`a compressed value inflates past maxInflatedBytes (${maxBytes} bytes)`, { cause: error });
  }
}

/**
 * Wrap a codec so that values whose encoding is at least `minBytes` are
 * stored deflated when that makes them smaller. Reads both forms, and values
 * written by a cache without `compressed()`; a corrupt compressed value is a
 * miss counted in `decodeErrors`. A cache without `compressed()` reads a
 * compressed value as a miss (a decode error) and overwrites it on its next load.
 * A value that would inflate past `maxInflatedBytes` is a miss too, found
 * after inflating that much at most: what a forged entry costs is bounded.
 *
 * The returned codec's own `encode`/`decode` are the wrapped codec's: the
 * pipeline compresses, so that the envelope, not the payload, says which
 * values are compressed.
 *
 * @param codec the codec to wrap: `"json"` (the default), `"string"`, `"bytes"` or a custom `{ encode, decode }`.
 * @param options when to compress, and how far a stored value may inflate.
 * @returns a codec for the pipeline's `codec` option.
 * @throws {RangeError} when `minBytes` is not a non-negative integer, `maxInflatedBytes` not an integer in
 * 1..1073741824, or `minBytes` over `maxInflatedBytes` (nothing would be compressed).
 * @throws {TypeError} when `codec` is not a codec, or is itself `compressed()`.
 *
 * @example Store large JSON values deflated
 * ```ts
 * import { compressed, connect, pipeline } from "@herdless/herdless";
 * const redis = await connect(process.env.REDIS_URL);
 * const cache = pipeline<{ id: number; name: string }[]>({ redis, ttlMs: 60_000, codec: compressed("json") });
 * await cache.invalidate("report");
 * const rows = Array.from({ length: 200 }, (_, i) => ({ id: i, name: `row ${i}` }));
 * console.log((await cache.get("report", () => rows)).length); // 200
 * await cache.close();
 * await redis.close();
 * ```
 */
export function compressed<T = unknown>(codec: CodecOption<T> = "json", options?: CompressedOptions): Codec<T> {
  const o = checkedOptions<CompressedOptions>("create compressed codec", "compressed()", options, COMPRESSED_OPTIONS);
  const minBytes = nonNegativeInt("create compressed codec", "minBytes", o.minBytes ?? 1024);
  const maxInflatedBytes = intInRange(
    "create compressed codec",
    "maxInflatedBytes",
    o.maxInflatedBytes ?? MAX_INFLATED_BYTES,
    1,
    2 ** 30,
  );
  if (minBytes > maxInflatedBytes) {
    throw new RangeError(
      `Cannot create compressed codec: 'minBytes' (${minBytes}) is over 'maxInflatedBytes' (${maxInflatedBytes}): nothing would be compressed`,
    );
  }
  if ((codec as { [COMPRESSION]?: unknown } | null)?.[COMPRESSION] !== undefined) {
    throw new TypeError("Cannot create compressed codec: 'codec' is already compressed()");
  }
  let inner: ResolvedCodec;
  try {
    inner = resolveCodec(codec);
  } catch (error) {
    throw new TypeError((error as Error).message.replace("create pipeline", "create compressed codec"));
  }
  const resolved: ResolvedCodec = Object.freeze({
    name: `compressed ${inner.name}`,
    id: inner.id,
    // Compressed payloads are bytes: text codecs then decode bytes too.
    binary: true,
    encode: inner.encode,
    decode: inner.decode,
    compress: (payload: string | Uint8Array) => deflate(payload, minBytes, maxInflatedBytes),
    inflate: (payload: Uint8Array) => inflate(payload, maxInflatedBytes),
  });
  return {
    // The wrapped codec's own, for a caller that uses the codec outside a
    // pipeline; a pipeline compresses and flags what it compresses itself.
    encode: (value: T) => inner.encode(value),
    decode: (payload: Uint8Array) => inner.decode(payload) as T,
    [COMPRESSION]: resolved,
  } as Codec<T>;
}
