/**
 * How values are stored: the built-in codecs (`"json"`, `"string"`,
 * `"bytes"`), a custom `{ encode, decode }`, and `compressed()` around any of
 * them.
 *
 * @module
 */
export { type Codec, type CodecOption, resolveCodec, type ResolvedCodec } from "./codec.ts";
export { compressed, type CompressedOptions } from "./compressed.ts";
