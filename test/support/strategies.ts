/**
 * What the strategy tests share besides the server: an origin that counts and
 * holds its calls, an event log that resolves once enough events were seen,
 * and `plant()`, which stores an entry exactly as a publication would (for a
 * test that needs an entry of a given age without waiting for it to age),
 * and the waits for what a real server decides when: an entry held near, an
 * entry past its fresh window.
 */
import { keySlot } from "../../resp/cluster/client.ts";
import type { Arg, RedisLike, SendOptions } from "../../resp/types.ts";
import { encodeEnvelope } from "../../strategies/pipeline/read/envelope.ts";
import { writePublication as publish } from "../../strategies/pipeline/fill/publish_script.ts";
import { token } from "../../strategies/pipeline/coherence/versions.ts";
import { epochKeyOf, escapeTag, tagKeyPrefix } from "../../strategies/pipeline/coherence/version_keys.ts";
import type { Cache } from "../../strategies/cache.ts";
import type { CacheEvent } from "../../strategies/events.ts";
import type { Identity, Keys, LoaderContext } from "../../strategies/types.ts";
import type { RedisCluster } from "./redis_cluster.ts";
import { deferred, until } from "./wait.ts";

/**
 * An origin that counts its calls and, while `hold` is set, waits for it
 * before answering. `called(n)` resolves once the origin has been called `n`
 * times (at once if it already has): prefer it to `started`, which resolves at
 * the start of the next call only and so misses a call that already began.
 */
export function origin<T>(answer: (call: number) => T | Promise<T>) {
  const waiters: { n: number; done: () => void }[] = [];
  const o = {
    calls: 0,
    signals: [] as AbortSignal[],
    hold: undefined as Promise<unknown> | undefined,
    started: deferred<number>(),
    called(n = 1): Promise<void> {
      if (o.calls >= n) return Promise.resolve();
      return new Promise((done) => waiters.push({ n, done }));
    },
    load: async ({ signal }: { signal: AbortSignal }): Promise<T> => {
      const call = ++o.calls;
      o.signals.push(signal);
      const started = o.started;
      o.started = deferred<number>();
      started.resolve(call);
      for (const w of [...waiters]) {
        if (call >= w.n) {
          waiters.splice(waiters.indexOf(w), 1);
          w.done();
        }
      }
      if (o.hold !== undefined) await o.hold;
      return answer(call);
    },
  };
  return o;
}

/** Collects events and resolves waiters once enough events of some types were seen. */
export function events() {
  const seen: CacheEvent[] = [];
  const waiters: { types: readonly string[]; n: number; done: () => void }[] = [];
  const count = (types: readonly string[]) => seen.filter((e) => types.includes(e.type)).length;
  return {
    seen,
    onEvent(event: CacheEvent) {
      seen.push(event);
      for (const w of [...waiters]) {
        if (count(w.types) >= w.n) {
          waiters.splice(waiters.indexOf(w), 1);
          w.done();
        }
      }
    },
    count(type: CacheEvent["type"]) {
      return count([type]);
    },
    /** Resolves once `n` events of `type` (or of the listed types together) were seen. */
    reach(type: CacheEvent["type"] | readonly CacheEvent["type"][], n: number): Promise<void> {
      const types = typeof type === "string" ? [type] : type;
      if (count(types) >= n) return Promise.resolve();
      return new Promise((done) => waiters.push({ types, n, done }));
    },
  };
}

/** What {@linkcode plant} stores. */
export interface Planted {
  /** The payload as the json codec stores it (already encoded), e.g. `'"current"'`. */
  payload?: string;
  freshMs: number;
  staleMs?: number;
  ifErrorMs?: number;
  loadMs?: number;
  negative?: boolean;
  tags?: readonly string[];
  /** The codec the envelope names. @default {"json"} */
  codec?: string;
  /** The etag stored with the value. */
  etag?: string;
  /** Pretend it was published this long ago (its server stamp moved back; its physical TTL shortened to match). */
  ageMs?: number;
}

/**
 * Store an entry for `identity` as a publication would: a version-3
 * envelope under the namespace's current epoch (and tag versions), stamped
 * by the server's TIME, with the physical TTL of its three windows.
 */
export async function plant(
  redis: RedisLike,
  cache: { keys(identity: Identity): Keys },
  identity: Identity,
  p: Planted,
): Promise<void> {
  const keys = cache.keys(identity);
  const namespace = keys.data.slice(0, keys.data.indexOf(":{"));
  const current = async (key: string) => {
    await redis.send(["SET", key, token(), "NX"]);
    return String(await redis.send(["GET", key]));
  };
  const tags = p.tags ?? [];
  const fields = {
    negative: p.negative ?? false,
    freshMs: p.freshMs,
    staleMs: p.staleMs ?? 0,
    ifErrorMs: p.ifErrorMs ?? 0,
    loadMs: p.loadMs ?? 0,
    id: token(),
    epoch: await current(epochKeyOf(namespace)),
    codec: p.codec ?? "json",
    etag: p.etag,
    tags,
    tagVersions: await Promise.all(tags.map((tag) => current(tagKeyPrefix(namespace) + escapeTag(tag)))),
  };
  const envelope = encodeEnvelope(fields, p.negative ? "" : (p.payload ?? '"v"'));
  const age = p.ageMs ?? 0;
  const px = fields.freshMs + fields.staleMs + fields.ifErrorMs - age;
  if (px <= 0) throw new Error(`plant: an entry ${age} ms old would already be gone`);
  await publish(redis, { key: keys.data, lease: keys.lease, mode: "plain", envelope, px, channel: "" });
  if (age > 0) {
    const [seconds, micros] = (await redis.send(["TIME"])) as [string, string];
    const then = Math.floor(Number(seconds) * 1000 + Number(micros) / 1000) - age;
    await redis.send(["SETRANGE", keys.data, 6, String(then).padStart(13, "0")]);
  }
}

/** `perPrimary` identities (`item-<i>`) whose data keys land on each primary of `cluster`. */
export function spread(cluster: RedisCluster, cache: { keys(id: Identity): Keys }, perPrimary: number): string[] {
  const primaries = cluster.primaries();
  const owner = (slot: number) => primaries.find((p) => p.slots.some(([lo, hi]) => slot >= lo && slot <= hi))!.port;
  const count = new Map<number, number>();
  const out: string[] = [];
  for (let i = 0; out.length < perPrimary * primaries.length; i++) {
    const id = `item-${i}`;
    const port = owner(keySlot(cache.keys(id).data));
    if ((count.get(port) ?? 0) >= perPrimary) continue;
    count.set(port, (count.get(port) ?? 0) + 1);
    out.push(id);
  }
  return out;
}

/**
 * Get `id` through `cache` until one get is a near hit serving `value`: near()
 * keeps only what a read no invalidation overtook brought in, and its
 * invalidations take a moment to start (tracking, or the message channel's
 * subscription), so a test that needs the entry held near reads until it is.
 * `id` must be in Redis already: a get that misses fails instead of loading.
 */
export async function untilNearHit<T>(cache: Cache<T>, id: Identity, value: T, withinMs?: number): Promise<void> {
  const missed = () => Promise.reject(new Error(`untilNearHit: a get of ${JSON.stringify(id)} missed`));
  await until(async () => {
    const hits = cache.stats().nearHits;
    return (await cache.get(id, missed)) === value && cache.stats().nearHits > hits;
  }, withinMs);
}

/**
 * Wait until the fresh window of `cache`'s entry of `id` is over for every
 * cache: the server's TTL of its data key is at most `windowMs` (the stale
 * or error window swr() added) less 500 ms. A cache judges windows by its
 * estimate of the server's clock, which may lag by half the round trip it
 * was measured over, and that round trip ran within `commandTimeoutMs`
 * (1000 ms by default): under load, a cache whose estimate lagged still
 * found the entry fresh right at the server's mark.
 */
export async function untilPastFresh(
  redis: RedisLike,
  cache: Pick<Cache<unknown>, "keys">,
  id: Identity,
  windowMs: number,
): Promise<void> {
  const data = cache.keys(id).data;
  await until(async () => Number(await redis.send(["PTTL", data])) <= windowMs - 500);
}

/** What `counting()` wraps: any client, with the connection state and key-to-node map where it has them. */
type Countable = RedisLike & { readonly connected?: boolean; nodeFor?(key: Arg): string | undefined };

/**
 * `redis` behind a wrapper that counts what goes through it: `sent`, every
 * command but the clock's TIME (the cache re-measures the server's clock
 * when its estimate ages, whatever gets do), and `reads`, the GETs (what a
 * get waits on at a dead or silent server). Send-only, as an adapter sees a
 * client, unless `connected` passes the client's own connection state on; a
 * cluster client's key-to-node map is passed on (it keeps an outage per node).
 */
export function counting(redis: Countable, options: { connected?: boolean } = {}) {
  const wire = {
    sent: 0,
    reads: 0,
    send(args: readonly Arg[], sendOptions?: SendOptions) {
      const name = String(args[0]).toUpperCase();
      if (name !== "TIME") wire.sent++;
      if (name === "GET") wire.reads++;
      return redis.send(args, sendOptions);
    },
  };
  if (options.connected === true) Object.defineProperty(wire, "connected", { get: () => redis.connected });
  if (typeof redis.nodeFor === "function") {
    Object.defineProperty(wire, "nodeFor", { value: (key: Arg) => redis.nodeFor!(key) });
  }
  return wire;
}

/** The server's clock, in ms (TIME). */
export async function serverMs(redis: RedisLike): Promise<number> {
  const [seconds, micros] = await redis.send(["TIME"]) as [string, string];
  return Number(seconds) * 1000 + Number(micros) / 1000;
}

/**
 * Wait until the server's own clock moved on by more than `byMs` from now:
 * what is written after it began surely after what happened before, whatever
 * the caches' estimates of that clock (each off by up to half a round trip).
 */
export async function untilServerMoved(redis: RedisLike, byMs: number): Promise<void> {
  const since = await serverMs(redis);
  await until(async () => (await serverMs(redis)) > since + byMs);
}

/**
 * A loader that answers `notModified()` once released: `called` resolves when
 * it runs, so a test can change the key (or kill Redis) while the
 * republication is pending; `calls` counts its runs.
 */
export function heldNotModified() {
  const held = deferred();
  const called = deferred();
  const loader = {
    calls: 0,
    called: called.promise,
    release: () => held.resolve(),
    load: async <T>(ctx: LoaderContext<T>): Promise<T> => {
      loader.calls++;
      called.resolve();
      await held.promise;
      return ctx.notModified();
    },
  };
  return loader;
}
