/**
 * `expire()`'s one atomic step: end an entry's fresh window now, keep it as
 * the stale fallback swr's windows give it, drop its lease and announce the
 * key.
 *
 * The envelope's windows are rewritten, not its publication time, `id` or
 * `loadMs` (the value is the same publication; the value-order rules still
 * date its load where it began). The fresh window becomes 0: a reader ages
 * an entry against its estimate of the server's clock, never below age 0,
 * so no estimate error makes it fresh again (a window that ended "now"
 * would read as fresh to an estimate running behind). The window after it
 * (stale, else error) absorbs the time the entry was fresh, so the stale
 * window runs from now for `staleMs`, then the error window, and the key
 * lives exactly that long. An entry already past its fresh window keeps its
 * other windows and its TTL. An entry with neither window (no `swr()`) or a
 * not-found has no stale life: it is deleted, as `invalidate()` would.
 *
 * The lease goes with it: a load that began before the source changed must
 * not publish its older snapshot as fresh (its guarded publication fails).
 *
 * @module
 */
import { Script } from "../../../resp/script.ts";
import type { RedisLike, SendOptions } from "../../../resp/types.ts";
import { MAX_WINDOW_MS } from "../../limits.ts";
import { PUBLISHED_AT_OFFSET } from "../read/mod.ts";

// The windows are the 4th to 6th fields: after publishedAt's 13 digits.
const EXPIRE = new Script(`
redis.call('DEL', KEYS[2])
local old = redis.call('GET', KEYS[1])
local function announce(result)
  if ARGV[1] ~= '' then redis.call('PUBLISH', ARGV[1], KEYS[1]) end
  return result
end
if not old then return announce(0) end
local kind = string.sub(old, 5, 5)
local at = ${PUBLISHED_AT_OFFSET + 14} + 1
local f1 = string.find(old, ';', at, true)
local f2 = f1 and string.find(old, ';', f1 + 1, true)
local f3 = f2 and string.find(old, ';', f2 + 1, true)
if string.sub(old, 1, 4) ~= 'hl3;' or kind == 'n' or not f3 then
  redis.call('DEL', KEYS[1])
  return announce(1)
end
local fresh = tonumber(string.sub(old, at, f1 - 1))
local stale = tonumber(string.sub(old, f1 + 1, f2 - 1))
local err = tonumber(string.sub(old, f2 + 1, f3 - 1))
if not fresh or not stale or not err or stale + err == 0 then
  redis.call('DEL', KEYS[1])
  return announce(1)
end
if fresh == 0 then return announce(2) end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local age = math.max(0, now - tonumber(string.sub(old, ${PUBLISHED_AT_OFFSET + 1}, ${PUBLISHED_AT_OFFSET + 13})))
local px = nil
local shift = fresh
if age < fresh then
  shift = age
  px = stale + err
end
if stale > 0 then stale = math.min(stale + shift, ${MAX_WINDOW_MS}) else err = math.min(err + shift, ${MAX_WINDOW_MS}) end
local value = string.sub(old, 1, at - 1) .. '0;' .. string.format('%.0f', stale) .. ';' ..
  string.format('%.0f', err) .. string.sub(old, f3)
if px then redis.call('SET', KEYS[1], value, 'PX', px) else redis.call('SET', KEYS[1], value, 'KEEPTTL') end
return announce(1)
`);

/** What one expire touches. */
export interface Expiry {
  /** The data key. */
  readonly key: string;
  /** The lease key (same hash tag). */
  readonly lease: string;
  /** The channel the data key is announced on ("" for none). */
  readonly channel: string;
}

/** End `e.key`'s fresh window now and drop its lease, in one step. */
export async function expireEntry(redis: RedisLike, e: Expiry, options?: SendOptions): Promise<void> {
  await EXPIRE.run(redis, [e.key, e.lease], [e.channel], options);
}
