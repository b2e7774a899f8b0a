/**
 * The RESP2/RESP3 decoder: bytes in, replies out, split across chunks
 * anywhere.
 *
 * @module
 */
export { Decoder, type DecoderHandlers, type DecoderOptions } from "./decoder.ts";
