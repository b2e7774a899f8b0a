/**
 * The lease's Lua scripts. Each checks the lease token and acts in the same
 * atomic step: a check followed by a separate write would let an owner whose
 * lease expired in between overwrite a newer owner's value or delete its
 * lease. They run through `Script`, so EVALSHA after the first use.
 *
 * KEYS are always the data key and the lease key (one hash tag, one slot).
 *
 * @module
 */
import { Script } from "../resp/script.ts";
import type { Arg, RedisLike, SendOptions } from "../resp/types.ts";
import type { Keys } from "./_types.ts";

// Store the envelope, drop the lease and announce the data key, only while
// the lease still holds our token (an expired or invalidated lease rejects).
const PUBLISH = new Script(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[4], KEYS[1])
return 1
`);

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

/**
 * Publish `envelope` under `keys.data` for `px` ms if `token` still holds the
 * lease. Resolves `true` when stored, `false` when the lease was lost.
 */
export async function publishScript(
  redis: RedisLike,
  keys: Keys,
  token: string,
  envelope: Arg,
  px: number,
  channel: string,
  options?: SendOptions,
): Promise<boolean> {
  return (await PUBLISH.run(redis, [keys.data, keys.lease], [token, envelope, px, channel], options)) === 1;
}

/** Drop the lease if `token` holds it. Resolves `true` when it did. */
export async function releaseScript(
  redis: RedisLike,
  keys: Keys,
  token: string,
  channel: string,
  options?: SendOptions,
): Promise<boolean> {
  return (await RELEASE.run(redis, [keys.data, keys.lease], [token, channel], options)) === 1;
}

/** Reset the lease's expiry to `leaseMs` if `token` holds it. Resolves `true` when it did. */
export async function renewScript(
  redis: RedisLike,
  keys: Keys,
  token: string,
  leaseMs: number,
  options?: SendOptions,
): Promise<boolean> {
  return (await RENEW.run(redis, [keys.data, keys.lease], [token, leaseMs], options)) === 1;
}
