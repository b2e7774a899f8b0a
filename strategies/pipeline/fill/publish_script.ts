/**
 * The publication: one Lua script that stores the envelope, stamps it with
 * the server's own `TIME` (the 13-digit `publishedAt` placeholder, written
 * in place with SETRANGE so a large value is not copied again), drops the
 * lease when asked and announces the data key, in one atomic step.
 *
 * - `guarded`: only while the guard key (the lease) still holds the caller's
 *   token, dropping it: a check then a separate write would let an owner
 *   whose lease expired in between overwrite a newer owner's value.
 * - `plain`: unconditionally (no lease in the pipeline).
 * - `force`: unconditionally, dropping whatever lease is held (`set()`), so
 *   a load that is running cannot publish over the value afterwards.
 *
 * A write can reach Redis long after its load ended (a client whose event
 * loop or link is congested): given when the load began (the client's
 * estimate of this server's clock), the script raises the envelope's
 * zero-padded `loadMs` in place to the time since then, so that the entry
 * is never taken for a load that began later than it did.
 *
 * It runs through `Script`: EVALSHA after the first use, EVAL on NOSCRIPT.
 *
 * @module
 */
import { Script } from "../../../resp/script.ts";
import type { Arg, RedisLike, SendOptions } from "../../../resp/types.ts";
import { LOAD_MS_DIGITS, PUBLISHED_AT_OFFSET } from "../read/mod.ts";

const PUBLISH = new Script(`
if ARGV[5] == 'g' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('SETRANGE', KEYS[1], ${PUBLISHED_AT_OFFSET}, string.format('%013.0f', now))
if ARGV[6] ~= '' then
  local ran = now - tonumber(ARGV[6])
  if ran > tonumber(ARGV[8]) then
    ran = math.min(ran, ${10 ** LOAD_MS_DIGITS - 1})
    redis.call('SETRANGE', KEYS[1], tonumber(ARGV[7]), string.format('%0${LOAD_MS_DIGITS}.0f', ran))
  end
end
if ARGV[5] ~= 'p' then redis.call('DEL', KEYS[2]) end
if ARGV[4] ~= '' then redis.call('PUBLISH', ARGV[4], KEYS[1]) end
return 1
`);

/** How a publication treats the lease key. */
export type PublishMode = "guarded" | "plain" | "force";

const MODE: Record<PublishMode, string> = { guarded: "g", plain: "p", force: "f" };

/** What one publication writes. */
export interface Publication {
  /** The data key. */
  readonly key: string;
  /** The lease key (same hash tag). */
  readonly lease: string;
  readonly mode: PublishMode;
  /** The caller's lease token (`guarded` only). */
  readonly token?: string;
  readonly envelope: Arg;
  /** The physical TTL, in ms. */
  readonly px: number;
  /** The channel the data key is announced on ("" for none). */
  readonly channel: string;
  /**
   * When the load began, in this client's estimate of the server's clock
   * (ms), with the envelope's `loadMs` and its byte offset: the script raises
   * `loadMs` to the time since then. Absent when the clock is not known yet
   * (nothing raised); `offset` is -1 when the field is wider than its
   * padding (nothing raised either).
   */
  readonly began?: { readonly at: number; readonly loadMs: number; readonly offset: number };
}

/** Publish `p`. Resolves `true` when stored, `false` when a guarded publication lost its lease. */
export async function writePublication(redis: RedisLike, p: Publication, options?: SendOptions): Promise<boolean> {
  const b = p.began;
  const args = b === undefined || b.offset < 0
    ? [p.token ?? "", p.envelope, p.px, p.channel, MODE[p.mode], ""]
    : [p.token ?? "", p.envelope, p.px, p.channel, MODE[p.mode], Math.floor(b.at), b.offset, b.loadMs];
  return (await PUBLISH.run(redis, [p.key, p.lease], args, options)) === 1;
}
