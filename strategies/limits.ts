/**
 * What an envelope can carry. The read side refuses a field past its bound
 * (so a hostile header costs a bounded parse); the write side checks every
 * setting that ends up in an envelope against the same bound, at the call,
 * so that what is written can always be read: a TTL or a tag list the read
 * side would refuse would otherwise be stored, then reloaded on every get.
 *
 * @module
 */
import { nonNegativeInt, positiveInt } from "../resp/shared/mod.ts";

/** The longest window (fresh, stale or error) an envelope carries, in ms: 15 decimal digits (about 31,700 years). */
export const MAX_WINDOW_MS = 999_999_999_999_999;
/** The most tags one value carries. */
export const MAX_TAGS = 64;
/** The longest tag, in characters. */
export const MAX_TAG_CHARS = 256;
/** The longest etag, in characters. */
export const MAX_ETAG_CHARS = 256;
/** The longest codec name, in characters. */
export const MAX_CODEC_NAME_CHARS = 64;

/**
 * Throws a `RangeError` naming `name` unless `value` is an integer window
 * an envelope can carry, at least `min` (1 for a TTL, 0 for an extra window).
 */
export function checkWindow(where: string, name: string, value: unknown, min: 0 | 1): number {
  const ms = min === 1 ? positiveInt(where, name, value) : nonNegativeInt(where, name, value);
  if (ms > MAX_WINDOW_MS) {
    throw new RangeError(
      `Cannot ${where}: '${name}' is ${ms}, over the longest window an entry carries (${MAX_WINDOW_MS} ms)`,
    );
  }
  return ms;
}
