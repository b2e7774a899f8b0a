/**
 * The guarded publication: a Lua script that stores the envelope only while
 * the guard key (the lease) still holds the caller's token, drops the guard
 * and announces the data key, in one atomic step. A check followed by a
 * separate write would let an owner whose lease expired in between overwrite
 * a newer owner's value. It runs through `Script`, so EVALSHA after the first
 * use and EVAL on NOSCRIPT.
 *
 * @module
 */
import { Script } from "../../resp/script.ts";
import type { Arg, RedisLike, SendOptions } from "../../resp/types.ts";
import type { PublishGuard } from "../types.ts";

const PUBLISH_GUARDED = new Script(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[4], KEYS[1])
return 1
`);

/** What one guarded publication writes. */
export interface GuardedPublication {
  /** The data key. */
  readonly key: string;
  readonly guard: PublishGuard;
  readonly envelope: Arg;
  /** The physical TTL, in ms. */
  readonly px: number;
  /** The channel the data key is announced on. */
  readonly channel: string;
}

/** Publish `p.envelope` if `p.guard` still holds. Resolves `true` when stored, `false` when the guard was lost. */
export async function publishGuarded(redis: RedisLike, p: GuardedPublication, options?: SendOptions): Promise<boolean> {
  const reply = await PUBLISH_GUARDED.run(
    redis,
    [p.key, p.guard.key],
    [p.guard.token, p.envelope, p.px, p.channel],
    options,
  );
  return reply === 1;
}
