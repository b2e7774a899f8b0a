/**
 * The lease's own Lua scripts besides the guarded publication (which the
 * pipeline runs for any guard): releasing and renewing. Each checks the token
 * and acts in the same atomic step: a check then a separate DEL or PEXPIRE
 * could act on a newer owner's lease.
 *
 * @module
 */
import { Script } from "../resp/script.ts";
import type { RedisLike, SendOptions } from "../resp/types.ts";
import type { Keys } from "./types.ts";

// Give the lease up (the owner failed or found a value) and wake waiters so
// one of them can take over at once instead of at lease expiry.
const RELEASE = new Script(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[2], KEYS[1])
return 1
`);

// Extend a lease a long loader still holds.
const RENEW = new Script(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[2], ARGV[2])
`);

/** Drop the lease if `token` holds it and announce the data key on `channel`. Resolves `true` when it did. */
export async function releaseLease(
  redis: RedisLike,
  lease: { readonly keys: Keys; readonly token: string; readonly channel: string },
  options?: SendOptions,
): Promise<boolean> {
  const { keys, token, channel } = lease;
  return (await RELEASE.run(redis, [keys.data, keys.lease], [token, channel], options)) === 1;
}

/** Reset the lease's expiry to `leaseMs` if `token` holds it. Resolves `true` when it did. */
export async function renewLease(
  redis: RedisLike,
  lease: { readonly keys: Keys; readonly token: string; readonly leaseMs: number },
  options?: SendOptions,
): Promise<boolean> {
  const { keys, token, leaseMs } = lease;
  return (await RENEW.run(redis, [keys.data, keys.lease], [token, leaseMs], options)) === 1;
}
