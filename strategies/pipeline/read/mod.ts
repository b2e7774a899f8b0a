/**
 * The read: identities to keys, the stored envelope, this client's estimate
 * of each server's clock, the values served but not stored, and the reader
 * that brings an entry from the near tier or Redis.
 *
 * @module
 */
export { ServerClock } from "./clock.ts";
export {
  decodeEnvelope,
  encodeEnvelope,
  type Envelope,
  type EnvelopeFields,
  LOAD_MS_DIGITS,
  loadMsOffset,
  PUBLISHED_AT_OFFSET,
} from "./envelope.ts";
export { KeyMemo } from "./key_memo.ts";
export { checkNamespace, keysFor } from "./keys.ts";
export { accepts, BYTES_PER_MS, Reader, type ReaderParts, type SharedKeys } from "./reader.ts";
export { blame, isOutage, Outage, type OutageParts, type RedisAccess } from "./outage.ts";
export { Unstored } from "./unstored.ts";
