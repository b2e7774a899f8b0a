/**
 * Which key's command failed, for a read that sends to more than one key's
 * server: a get's GET goes beside the epoch's when the epoch is not tracked,
 * and the versions are read from their own keys. On a cluster each key may
 * live on another primary, and with `onRedisDown: "local"` the server marked
 * down must be the one that failed (`read/outage.ts`), not the get's own.
 *
 * @module
 */

const blamed = new WeakMap<object, string>();

/** Record that `error` came from a command on `key` (the first record stands); returns `error`. */
export function blame(error: unknown, key: string): unknown {
  if (typeof error === "object" && error !== null && !blamed.has(error)) blamed.set(error, key);
  return error;
}

/** The key `error` was blamed on, if any. */
export function blamedKey(error: unknown): string | undefined {
  return typeof error === "object" && error !== null ? blamed.get(error) : undefined;
}
