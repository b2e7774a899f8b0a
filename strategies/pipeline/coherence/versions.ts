/**
 * The namespace epoch and the tag versions: random tokens, each in its own
 * key (`version_keys.ts`). Every envelope records the epoch and the
 * versions of its tags as they were when its load started; a value whose
 * epoch or any tag version is no longer current is a miss. `clear()` and
 * `invalidateTags()` write a new token: one command per call or per tag,
 * whatever the number of entries. Tokens are random rather than counters,
 * so a token key that vanishes (eviction, FLUSHALL, expiry) comes back as a
 * new token that matches nothing written before: a missing key invalidates
 * everything under it, never revives it. So version keys can expire, 24 h
 * after a process last used them (`version_life.ts`).
 *
 * With client tracking the current tokens are kept in memory and dropped
 * when Redis invalidates their keys, so a hit costs no round trip for them;
 * without it (an adapter, a RESP2 client) they are read in the same round
 * trip as the data key (the epoch) or the next one (tags).
 *
 * @module
 */
import { timeoutOptions } from "../../../resp/shared/mod.ts";
import type { RedisLike, Reply, SendOptions } from "../../../resp/types.ts";
import type { InvalidationConsumer, Invalidations } from "./invalidations.ts";
import { blame } from "../read/outage.ts";
import { epochKeyOf, escapeTag, tagKeyPrefix } from "./version_keys.ts";
import { type KnownVersion, VersionLife } from "./version_life.ts";

/** What the versions need of their cache. */
export interface VersionsContext {
  readonly redis: RedisLike;
  readonly namespace: string;
  readonly invalidations: Invalidations;
  readonly commandTimeoutMs: number;
  /** Where a token written here is announced, for caches that hear invalidation messages instead of tracking. */
  readonly channel?: string;
  /** Whether a write refusal is to be served through (failOpen). */
  readonly servesThrough?: (error: unknown) => boolean;
  /** The local monotonic clock, in ms (the cache's `now`). */
  readonly now: () => number;
}

/** The epoch and tag versions written with a value. */
export interface Stamp {
  readonly epoch: string;
  readonly tagVersions: readonly string[];
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const bytes = new Uint8Array(12);

/**
 * A random token of 12 base64url characters (72 bits) from the platform's
 * CSPRNG, never from the cache's injectable `random`: a test that fixes
 * `random` must not make two publications share an id.
 */
export function token(): string {
  crypto.getRandomValues(bytes);
  let out = "";
  for (let i = 0; i < 12; i++) out += ALPHABET[bytes[i]! & 63];
  return out;
}

/** The current epoch and tag versions of one cache. */
export class Versions implements InvalidationConsumer {
  readonly #cache: VersionsContext;
  /** Known current tokens by key; only while tracked. */
  readonly #known = new Map<string, KnownVersion>();
  /**
   * The same tokens of tags, by tag: a hit looks its tags up without
   * escaping them into keys. Each key's tag, to forget it by key.
   */
  readonly #knownTags = new Map<string, KnownVersion>();
  readonly #tagOfKey = new Map<string, string>();
  /** The TTLs of the version keys, extended as they are used. */
  readonly life: VersionLife;
  /** Token reads in flight by key. */
  readonly #reading = new Map<string, Promise<string>>();
  readonly epochKey: string;
  readonly #tagPrefix: string;

  constructor(context: VersionsContext) {
    this.#cache = context;
    this.epochKey = epochKeyOf(context.namespace);
    this.#tagPrefix = tagKeyPrefix(context.namespace);
    this.life = new VersionLife(context, () => this.#known.values());
    context.invalidations.consume(this);
  }

  /** The key holding `tag`'s version. */
  tagKey(tag: string): string {
    return this.#tagPrefix + escapeTag(tag);
  }

  /** The version of `tag` if it is known (tracked) now, without I/O. */
  knownTag(tag: string): string | undefined {
    return this.#used(this.#knownTags.get(tag));
  }

  /** The current epoch, read (and created when missing) unless it is known. */
  epoch(): Promise<string> {
    const known = this.#used(this.#known.get(this.epochKey));
    return known === undefined ? this.#read(this.epochKey) : Promise.resolve(known);
  }

  /** Whether the epoch is known (tracked) now: a read needs nothing of its key's server. */
  get epochKnown(): boolean {
    return this.#known.has(this.epochKey);
  }

  /** An untracked read took the epoch's token straight from Redis (nothing is kept): a use of its key. */
  epochRead(): void {
    this.life.epochRead(this.epochKey);
  }

  /**
   * Start reading the epoch if it is not known, so a read that finds its
   * entry missing or needs the epoch to judge it does not pay one more
   * round trip for it: sent now, it travels with the read's own GET.
   */
  prefetchEpoch(): void {
    if (this.#known.has(this.epochKey) || this.#reading.has(this.epochKey)) return;
    // A failure reaches whoever awaits the epoch; the prefetch itself ignores it.
    this.#read(this.epochKey).catch(() => {});
  }

  /** The current versions of `tags`, in order, read (and created when missing) unless known. */
  async tagVersions(tags: readonly string[]): Promise<string[]> {
    return await Promise.all(tags.map((tag) => this.knownTag(tag) ?? this.#read(this.tagKey(tag), tag)));
  }

  /**
   * What a load that starts while Redis cannot be reached is kept with: the
   * known tokens, without I/O; an unknown one is a token of its own that
   * matches nothing (the value serves this process only, and never stands
   * in for an entry once Redis is back).
   */
  stampOffline(tags: readonly string[]): Stamp {
    return {
      epoch: this.#used(this.#known.get(this.epochKey)) ?? token(),
      tagVersions: tags.map((tag) => this.knownTag(tag) ?? token()),
    };
  }

  /** What a load that starts now publishes with. */
  async stamp(tags: readonly string[]): Promise<Stamp> {
    const [epoch, tagVersions] = await Promise.all([this.epoch(), tags.length === 0 ? [] : this.tagVersions(tags)]);
    return { epoch, tagVersions };
  }

  /**
   * Whether an entry written under `epoch` and `tags`/`versions` is still
   * current, using the known tokens only: `true`, `false`, or `undefined`
   * when a token is not known now (the caller then reads it).
   */
  currentKnown(epoch: string, tags: readonly string[], versions: readonly string[]): boolean | undefined {
    const known = this.#known.get(this.epochKey);
    if (known === undefined) return undefined;
    if (known.token !== epoch) return false;
    // A hit is a use: past its half-life (the sweep says so) the key is extended.
    if (known.due) this.life.use(known);
    let unknown = false;
    for (let i = 0; i < tags.length; i++) {
      const v = this.#knownTags.get(tags[i]!);
      if (v === undefined) unknown = true;
      else if (v.token !== versions[i]) return false;
      else if (v.due) this.life.use(v);
    }
    return unknown ? undefined : true;
  }

  /** Whether an entry's epoch (given `current`) and tag versions are current, reading what is not known. */
  async current(
    epoch: string,
    current: string,
    tags: readonly string[],
    versions: readonly string[],
  ): Promise<boolean> {
    if (epoch !== current) return false;
    if (tags.length === 0) return true;
    const now = await this.tagVersions(tags);
    for (let i = 0; i < tags.length; i++) if (now[i] !== versions[i]) return false;
    return true;
  }

  /**
   * Move the epoch on: every entry written before becomes a miss. Resolves
   * the new epoch. The key is announced on `channel` after the write, for
   * near tiers that hear invalidation messages instead of client tracking.
   */
  async clear(channel: string): Promise<string> {
    const next = token();
    const options = timeoutOptions(this.#cache.commandTimeoutMs, "commandTimeoutMs");
    await this.#cache.redis.send(["SET", this.epochKey, next, "PX", this.life.ttlMs], options);
    await this.#cache.redis.send(["PUBLISH", channel, this.epochKey], options);
    return next;
  }

  /**
   * Give each tag a new version: every entry carrying one becomes a miss.
   * Each key is announced on `channel` after. Resolves the keys written.
   */
  async bump(tags: readonly string[], channel: string): Promise<string[]> {
    const options = timeoutOptions(this.#cache.commandTimeoutMs, "commandTimeoutMs");
    return await Promise.all(tags.map(async (tag) => {
      const key = this.tagKey(tag);
      await this.#cache.redis.send(["SET", key, token(), "PX", this.life.ttlMs], options);
      await this.#cache.redis.send(["PUBLISH", channel, key], options);
      return key;
    }));
  }

  invalidate(keys: readonly string[]): void {
    if (this.#known.size === 0) return;
    for (const key of keys) {
      if (!this.#known.delete(key)) continue;
      const tag = this.#tagOfKey.get(key);
      if (tag === undefined) continue;
      this.#tagOfKey.delete(key);
      this.#knownTags.delete(tag);
    }
  }

  reset(): void {
    this.#known.clear();
    this.#knownTags.clear();
    this.#tagOfKey.clear();
    this.life.stop();
  }

  /**
   * `tag`'s version as of now, for a loader's `setTags()`: the known one, or
   * a GET sent now. A tag without a version yet gets ours (SET NX); if
   * another version landed between our GET and our SET NX, it may be an
   * invalidation that came after the call, so the value takes a version of
   * its own that nothing matches: a miss, never a value an invalidation
   * should have dropped.
   */
  async tagVersionNow(tag: string): Promise<string> {
    const known = this.knownTag(tag);
    if (known !== undefined) return known;
    const c = this.#cache;
    const key = this.tagKey(tag);
    const options = timeoutOptions(c.commandTimeoutMs, "commandTimeoutMs");
    const readAt = c.now();
    const [now, pttl] = await Promise.all([c.redis.send(["GET", key], options), this.#pttl(key, options)]);
    if (typeof now === "string") {
      this.life.read(key, pttl, readAt);
      return now;
    }
    const mine = token();
    const [, stored] = await Promise.all([
      c.redis.send(["SET", key, mine, "NX", "PX", this.life.ttlMs], options),
      c.redis.send(["GET", key], options),
    ]);
    return stored === mine ? mine : token();
  }

  // The token, when it is known, after counting this as a use of its key.
  #used(known: KnownVersion | undefined): string | undefined {
    if (known === undefined) return undefined;
    if (known.due) this.life.use(known);
    return known.token;
  }

  // A key's remaining TTL, read beside its token. A refusal (an ACL rule
  // without +pttl) is taken for a full TTL: the key is then extended half a
  // TTL after this read, never on every read.
  #pttl(key: string, options: SendOptions): Promise<number> {
    return this.#cache.redis.send(["PTTL", key], options).then(Number, () => this.life.ttlMs);
  }

  // Concurrent readers of a token share one read. `tag`: the tag whose key it is.
  #read(key: string, tag?: string): Promise<string> {
    let reading = this.#reading.get(key);
    if (reading === undefined) {
      // A failure names the key read: its server is the one down (onRedisDown "local" on a cluster).
      reading = this.#current(key, tag).catch((error) => {
        throw blame(error, key);
      }).finally(() => this.#reading.delete(key));
      this.#reading.set(key, reading);
    }
    return reading;
  }

  // Read a token, creating it when missing. SET NX then GET leave in one
  // write: whoever creates it first wins and everyone reads the winner's.
  async #current(key: string, tag: string | undefined): Promise<string> {
    const c = this.#cache;
    const options = timeoutOptions(c.commandTimeoutMs, "commandTimeoutMs");
    const marker = c.invalidations.begin(key);
    const readAt = c.now();
    // Its TTL rides along: reading a version is a use of its key.
    let life = this.#pttl(key, options);
    let value: Reply = await c.redis.send(["GET", key], options);
    if (value === null) {
      const created = c.redis.send(["SET", key, token(), "NX", "PX", this.life.ttlMs], options);
      const read = c.redis.send(["GET", key], options);
      life = this.#pttl(key, options);
      const [set, got] = await Promise.allSettled([created, read]);
      if (got.status === "rejected") {
        c.invalidations.end(marker);
        throw got.reason;
      }
      value = got.value;
      if (set.status === "rejected") {
        // Redis refuses writes (OOM) and the token key is gone (evicted):
        // a token of our own, stored nowhere, matches no entry, so reads
        // miss and loads are served uncached, as the cache fails open. But
        // when another process created the key between our two reads, its
        // token is the current one: a value stamped with one of our own
        // would look invalidated once that token is known here, and a
        // value this process served (kept unstored) would give way to an
        // older one stored under it (the chaos run's OOM row).
        if (c.servesThrough?.(set.reason) !== true) {
          c.invalidations.end(marker);
          throw set.reason;
        }
        if (value === null) {
          c.invalidations.end(marker);
          return token();
        }
      }
      // Our own SET invalidates the key we just read: the marker is dead and
      // the token is read again next time, which costs one round trip once.
      // A missing token was evicted (or never written): caches that hear
      // messages instead of tracking still hold the old one in memory, and
      // would judge every entry stamped with the new one a miss.
      if (c.channel !== undefined && set.status === "fulfilled") {
        await c.redis.send(["PUBLISH", c.channel, key], options);
      }
    }
    if (typeof value !== "string") throw new Error(`unexpected value at ${key}: ${String(value)}`);
    const renewAt = this.life.read(key, await life, readAt);
    if (c.invalidations.end(marker)) {
      const known: KnownVersion = { key, token: value, renewAt, due: false };
      this.#known.set(key, known);
      if (tag !== undefined) {
        this.#knownTags.set(tag, known);
        this.#tagOfKey.set(key, tag);
      }
      this.life.keep(known);
    }
    return value;
  }
}
