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
import { checkedOptions, nonNegativeInt } from "../../resp/shared/mod.ts";
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
}

const COMPRESSED_OPTIONS = Object.keys({ minBytes: true } satisfies Record<keyof CompressedOptions, true>);

const encoder = new TextEncoder();

/** Deflate `payload` when it is at least `minBytes` long and shrinks; `undefined` to store it as it is. */
export function deflate(payload: string | Uint8Array, minBytes: number): Uint8Array | undefined {
  // A string's UTF-8 length is between its length and three times it: only
  // the undecided ones are encoded before compression would encode them anyway.
  if (typeof payload === "string" && payload.length * 3 < minBytes) return undefined;
  const bytes = typeof payload === "string" ? encoder.encode(payload) : payload;
  if (bytes.length < minBytes || bytes.length === 0) return undefined;
  const packed = deflateRawSync(bytes);
  return packed.length < bytes.length ? packed : undefined;
}

/**
 * Inflate a compressed payload.
 *
 * @throws {Error} when it is not valid deflate data (a corrupt value: the read counts a decode error).
 */
export function inflate(payload: Uint8Array): Uint8Array {
  return inflateRawSync(payload);
}

/**
 * Wrap a codec so that values whose encoding is at least `minBytes` are
 * stored deflated when that makes them smaller. Reads both forms, and values
 * written by a cache without `compressed()`; a corrupt compressed value is a
 * miss counted in `decodeErrors`. A cache without `compressed()` reads a
 * compressed value as a miss (a decode error) and overwrites it on its next load.
 *
 * The returned codec's own `encode`/`decode` are the wrapped codec's: the
 * pipeline compresses, so that the envelope, not the payload, says which
 * values are compressed.
 *
 * @param codec the codec to wrap: `"json"` (the default), `"string"`, `"bytes"` or a custom `{ encode, decode }`.
 * @param options when to compress.
 * @returns a codec for the pipeline's `codec` option.
 * @throws {RangeError} when `minBytes` is not a non-negative integer.
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
    compress: (payload: string | Uint8Array) => deflate(payload, minBytes),
    inflate,
  });
  return {
    // The wrapped codec's own, for a caller that uses the codec outside a
    // pipeline; a pipeline compresses and flags what it compresses itself.
    encode: (value: T) => inner.encode(value),
    decode: (payload: Uint8Array) => inner.decode(payload) as T,
    [COMPRESSION]: resolved,
  } as Codec<T>;
}
