/**
 * Codecs turn values into the payload stored after the envelope header, and
 * back. The built-in ones: `json` (the default), `string` and `bytes`
 * (binary safe); a custom codec is any `{ encode, decode }` pair.
 *
 * @module
 */
import { formatPath, jsonRefusal, type Refusal, refusalOfError } from "./json_check.ts";
import { CodecError } from "../errors.ts";

/**
 * A custom codec. `encode` throws (preferably a `CodecError`, with the
 * `path` inside the value) for a value it cannot represent: the caller then
 * gets a `CodecError` naming the key and nothing is cached.
 * `decode` throwing makes the stored value a miss, counted in `decodeErrors`.
 */
export interface Codec<T> {
  /**
   * The name written with every value it encodes (letters, digits, `.`,
   * `_`, `-`; at most 64): a cache whose codec has another name takes such
   * an entry for a miss (a `decode-error` naming both) instead of decoding
   * it into a value of the wrong type. Give two incompatible codecs
   * different names.
   * @default {"custom"}
   */
  readonly name?: string;
  /** The payload to store for `value`. */
  encode(value: T): string | Uint8Array;
  /** The value a stored payload stands for (a copy the caller may keep). */
  decode(payload: Uint8Array): T;
}

/** The `codec` option: a built-in codec's name or a custom codec. */
export type CodecOption<T> = "json" | "string" | "bytes" | Codec<T>;

/** A codec with a name, decoding text or bytes (an adapter may return text). */
export interface ResolvedCodec {
  /** How messages name it (`compressed json`). */
  readonly name: string;
  /** The name envelopes carry (`json` for `compressed("json")` too: it reads both). */
  readonly id: string;
  /** Read its values as bytes (`buffers: true`); text codecs get the client's string, decoded once. */
  readonly binary: boolean;
  encode(value: unknown): string | Uint8Array;
  decode(payload: Uint8Array | string): unknown;
  /** `compressed()` only: the compressed form of an encoded payload, or `undefined` to store it as it is. */
  readonly compress?: (payload: string | Uint8Array) => Uint8Array | undefined;
  /** `compressed()` only: a compressed payload inflated (throws on corrupt data). */
  readonly inflate?: (payload: Uint8Array) => Uint8Array;
}

/** Where a codec made by `compressed()` carries its resolved form. */
export const COMPRESSION: unique symbol = Symbol.for("herdless.compressed");

const utf8 = new TextDecoder("utf-8", { fatal: true });
const toBytes = new TextEncoder();

function text(payload: Uint8Array | string): string {
  return typeof payload === "string" ? payload : utf8.decode(payload);
}

function kind(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "object") return (value as object).constructor?.name ?? "object";
  return typeof value;
}

function refused(refusal: Refusal, cause?: unknown): CodecError {
  const path = formatPath(refusal.path);
  return new CodecError(`${path} ${refusal.reason}`, { path, cause });
}

const json: ResolvedCodec = {
  name: "json",
  id: "json",
  binary: false,
  encode(value) {
    let out: string | undefined;
    try {
      out = JSON.stringify(value);
    } catch (cause) {
      // A BigInt, a cycle, a throwing getter: say where.
      throw refused(refusalOfError(value), cause);
    }
    // Stringify succeeded, so there is no cycle; what it would have changed
    // silently (a Date into a string, a Map into {}) is refused here.
    const refusal = out === undefined
      ? jsonRefusal(value) ?? { reason: `is ${kind(value)} (JSON has no form for it)`, path: [] }
      : jsonRefusal(value);
    if (refusal !== undefined) throw refused(refusal);
    return out!;
  },
  decode: (payload) => JSON.parse(text(payload)),
};

// In a `u` regexp a surrogate range matches only a surrogate without its other half.
const LONE_SURROGATE = /[\ud800-\udfff]/u;

const string: ResolvedCodec = {
  name: "string",
  id: "string",
  binary: false,
  encode(value) {
    if (typeof value !== "string") throw new CodecError(`expected a string, got ${kind(value)}`);
    // UTF-8 has no form for a lone surrogate: it would be stored as U+FFFD,
    // and every hit would then serve another string than the one loaded.
    const lone = value.search(LONE_SURROGATE);
    if (lone >= 0) throw new CodecError(`a lone surrogate at index ${lone} has no UTF-8 form`);
    return value;
  },
  decode: text,
};

const bytes: ResolvedCodec = {
  name: "bytes",
  id: "bytes",
  binary: true,
  encode(value) {
    if (!(value instanceof Uint8Array)) throw new CodecError(`expected a Uint8Array, got ${kind(value)}`);
    return value;
  },
  // No copy: our client returns a buffers-mode bulk string as a fresh copy,
  // never a view of a socket chunk (resp/decode/scalars.ts), and the read
  // copies an adapter's view of a larger buffer once; so this view past the
  // envelope header pins only the stored value itself, and a second copy
  // per hit would buy nothing.
  decode: (payload) => (typeof payload === "string" ? toBytes.encode(payload) : payload),
};

/**
 * Resolve the `codec` option.
 *
 * @throws {TypeError} for an unknown name or an object without `encode` and `decode` functions.
 */
export function resolveCodec(option: unknown): ResolvedCodec {
  if (option === undefined || option === "json") return json;
  const compressed = (option as { [COMPRESSION]?: ResolvedCodec } | null)?.[COMPRESSION];
  if (compressed !== undefined) return compressed;
  if (option === "string") return string;
  if (option === "bytes") return bytes;
  if (
    option !== null && typeof option === "object" &&
    typeof (option as Codec<unknown>).encode === "function" &&
    typeof (option as Codec<unknown>).decode === "function"
  ) {
    const custom = option as Codec<unknown>;
    const id = custom.name ?? "custom";
    if (typeof id !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(id)) {
      throw new TypeError(
        `Cannot create pipeline: the codec's 'name' must be 1 to 64 letters, digits, '.', '_' or '-', got ${
          JSON.stringify(id)
        }`,
      );
    }
    return {
      name: id === "custom" ? "custom" : `custom ${id}`,
      id,
      binary: true,
      encode: (value) => custom.encode(value),
      // The same fresh copy as for bytes: the codec may keep it.
      decode: (payload) => custom.decode(typeof payload === "string" ? toBytes.encode(payload) : payload),
    };
  }
  throw new TypeError(
    `Cannot create pipeline: 'codec' must be "json", "string", "bytes" or an object with encode and decode functions, got ${
      typeof option === "string" ? JSON.stringify(option) : typeof option
    }`,
  );
}
