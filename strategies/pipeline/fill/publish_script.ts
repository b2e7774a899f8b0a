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
 * A republication (`ctx.notModified()`) sends a header only: the script
 * keeps the payload the key holds, provided the key still holds the
 * publication the load replaced (its `id`), and writes it under the new
 * header: a new `id`, the server's `TIME`, new windows and etag. The value
 * keeps the epoch and tag versions it was stored under (and its tags,
 * unless the loader chose others with `setTags`): a `clear()` or
 * `invalidateTags()` since it was read leaves the republication a miss, as
 * it left the value one. It is neither encoded nor sent again; Redis copies
 * it once in its own memory. The lease check, the lease drop and the
 * announcement are the same as a publication's, so the value-order and
 * lease rules hold as for one: a reader tells the republication from the
 * entry it replaces by its `id`.
 *
 * It runs through `Script`: EVALSHA after the first use, EVAL on NOSCRIPT.
 *
 * @module
 */
import { Script } from "../../../resp/script.ts";
import type { Arg, RedisLike, SendOptions } from "../../../resp/types.ts";
import { LOAD_MS_DIGITS, PUBLISHED_AT_OFFSET } from "../read/mod.ts";

// Stores value in KEYS[1], then stamps, raises loadMs, drops the lease and announces.
const STORE = `
redis.call('SET', KEYS[1], value, 'PX', ARGV[3])
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
`;

const GUARD = `if ARGV[5] == 'g' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end`;

const PUBLISH = new Script(`
${GUARD}
local value = ARGV[2]
${STORE}`);

// ARGV[2] is a header alone, ARGV[9] the id of the publication it replaces,
// ARGV[10] 'k' to keep the stored tags. An envelope's fields end at its first
// twelve ";": the id is the 8th field, the epoch the 9th, the tags the 12th,
// then the payload. 2: the key holds nothing; 3: another publication.
const REPUBLISH = new Script(`
${GUARD}
local old = redis.call('GET', KEYS[1])
if not old then return 2 end
local function fields(s)
  local at, from = {}, 1
  for i = 1, 12 do
    local semi = string.find(s, ';', from, true)
    if not semi then return nil end
    at[i] = semi
    from = semi + 1
  end
  return at
end
local o = fields(old)
if string.sub(old, 1, 4) ~= 'hl3;' or not o or string.sub(old, o[7] + 1, o[8] - 1) ~= ARGV[9] then return 3 end
local h = ARGV[2]
local n = fields(h)
local tags = ARGV[10] == 'k' and string.sub(old, o[11] + 1, o[12]) or string.sub(h, n[11] + 1, n[12])
local value = string.sub(h, 1, 4) .. string.sub(old, 5, 5) .. string.sub(h, 6, n[8]) ..
  string.sub(old, o[8] + 1, o[9]) .. string.sub(h, n[9] + 1, n[11]) .. tags .. string.sub(old, o[12] + 1)
${STORE}`);

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
  return (await PUBLISH.run(redis, [p.key, p.lease], publicationArgs(p), options)) === 1;
}

/** How a republication ended: stored, its lease lost, the key empty, or holding another publication. */
export type Republished = "stored" | "lost" | "absent" | "replaced";

const REPUBLISHED: Record<number, Republished> = { 0: "lost", 1: "stored", 2: "absent", 3: "replaced" };

/**
 * Republish the payload the data key holds under `p.envelope`, a header
 * alone, provided the key still holds publication `id`. Taken from the
 * stored entry: its kind letter (a compressed payload stays marked so), its
 * epoch, and its tags with their versions unless `keepTags` is false (the
 * header's own are used). Neither `absent` nor `replaced` touches the key or the lease.
 */
export async function writeRepublication(
  redis: RedisLike,
  p: Publication,
  id: string,
  keepTags: boolean,
  options?: SendOptions,
): Promise<Republished> {
  const args = publicationArgs(p);
  while (args.length < 8) args.push("");
  args.push(id, keepTags ? "k" : "");
  const reply = await REPUBLISH.run(redis, [p.key, p.lease], args, options);
  const outcome = REPUBLISHED[Number(reply)];
  if (outcome === undefined) throw new Error(`unexpected republication reply: ${String(reply)}`);
  return outcome;
}

function publicationArgs(p: Publication): Arg[] {
  const b = p.began;
  return b === undefined || b.offset < 0
    ? [p.token ?? "", p.envelope, p.px, p.channel, MODE[p.mode], ""]
    : [p.token ?? "", p.envelope, p.px, p.channel, MODE[p.mode], Math.floor(b.at), b.offset, b.loadMs];
}
