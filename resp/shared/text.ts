/**
 * The text a reply carries, decoded once in one place: a string as is, bytes
 * (a reply read with `buffers`, or a push decoded while such a command headed
 * the queue) as UTF-8.
 *
 * @module
 */
const utf8 = new TextDecoder();

/** `value` as text when it is a string or bytes; `undefined` otherwise, each caller choosing its fallback. */
export function replyText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (value instanceof Uint8Array) return utf8.decode(value);
  return undefined;
}
