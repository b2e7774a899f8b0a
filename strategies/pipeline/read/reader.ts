/**
 * The read phase: the entry of a key, from the near tier when it holds a
 * current one (no I/O), else from Redis with one command (`GET`; plus the
 * epoch's `GET` in the same round trip when the versions are not tracked),
 * decoded once and aged against this client's estimate of the server's
 * clock. A value written under an older epoch or tag version is a miss. A
 * remote read that no invalidation overtook is offered to the near tier.
 *
 * @module
 */
import { race, replyText, timeoutOptions } from "../../../resp/shared/mod.ts";
import { isRedisReplyError } from "../../../resp/errors.ts";
import type { Arg, RedisLike, Reply, SendOptions } from "../../../resp/types.ts";
import type { ResolvedCodec } from "../../codec/mod.ts";
import type { Entry, ReadResult, StoredEntry } from "../../contract.ts";
import type { CacheEvent } from "../../events.ts";
import type { Keys } from "../../types.ts";
import type { Invalidations, Marker, NearTier, Versions } from "../coherence/mod.ts";
import type { ServerClock } from "./clock.ts";
import { blame } from "./outage.ts";
import { decodeStored, type EnvelopeCodec } from "./envelope.ts";
import type { Unstored } from "./unstored.ts";

/** What the reader uses of its cache. */
export interface ReaderParts {
  readonly redis: RedisLike;
  readonly codec: ResolvedCodec;
  readonly commandTimeoutMs: number;
  readonly clock: ServerClock;
  readonly invalidations: Invalidations;
  readonly versions: Versions;
  /** The near tier, if the pipeline has one. */
  readonly local: NearTier | undefined;
  /** The local monotonic clock (the cache's `now`). */
  readonly now: () => number;
  /** Values this process served but Redis refused to store: they stand in for older stored entries. */
  readonly unstored: Unstored;
  emit(event: CacheEvent): void;
}

/**
 * The keys of one identity as the key memo hands them out: every caller of
 * the identity gets the same object, so the read of its data key in flight
 * hangs on it, for the gets that start meanwhile to join.
 */
export interface SharedKeys extends Keys {
  /** The read of `data` in flight, if any. */
  reading: Promise<Entry | undefined> | undefined;
  /** The reader's generation when that read started: a `forgetAll()` since then leaves it unjoinable. */
  readingSince: number;
}

/**
 * How fast a large value is taken to cross the network, in bytes per ms: a
 * publication's deadline and a read's grow by its size over this. 10 MB/s is
 * slow on purpose (a loaded 1 Gbit/s link shared with others).
 */
export const BYTES_PER_MS = 10_000;

/** Reads, decodes and ages the entries of one cache. */
export class Reader {
  readonly #p: ReaderParts;
  /** The options of a command without a caller's signal: one object for all. */
  readonly #plain: SendOptions;
  readonly #plainBytes: SendOptions;
  /** The cache's codec, as the envelope names it. */
  readonly #codec: EnvelopeCodec;
  /** Moved on by {@linkcode forgetAll}: a read started before is joined no more. */
  #generation = 0;

  constructor(parts: ReaderParts) {
    this.#p = parts;
    const { id, decode, inflate } = parts.codec;
    this.#codec = inflate === undefined ? { name: id, decode } : { name: id, decode, inflate };
    // A large value's reply grows its deadline as its publication's did.
    this.#plain = Object.freeze({
      ...timeoutOptions(parts.commandTimeoutMs, "commandTimeoutMs"),
      bytesPerMs: BYTES_PER_MS,
    });
    this.#plainBytes = Object.freeze({ ...this.#plain, buffers: true });
  }

  /**
   * The entry of `keys` in Redis for a caller of the cache (get, getMany,
   * peek, warm; they look at the near tier first): from the read of the key
   * already in flight in this process, else from a new one that later
   * callers join. A shared read obeys no caller's signal (its commands are
   * bounded by commandTimeoutMs); each caller stops waiting on its own `signal`.
   */
  shared(keys: SharedKeys, signal: AbortSignal | undefined): Promise<Entry | undefined> {
    let read = keys.reading;
    if (read === undefined || keys.readingSince !== this.#generation) {
      read = keys.reading = this.#remote(keys, undefined, undefined, keys);
      keys.readingSince = this.#generation;
    }
    return signal === undefined ? read : race(read, signal);
  }

  /**
   * The entry of `keys`: from the near tier when it holds a current one (no
   * I/O), else from Redis in one round trip, after `extra` when given (an `extra`
   * always goes to Redis: the lease's `SET NX` must see the server). A read
   * of its own, never shared: the strategies' reads (the lease's, a
   * waiter's, the re-check after winning) must see the server as it is now.
   */
  async lookup(keys: Keys, signal: AbortSignal | undefined, extra?: readonly Arg[]): Promise<ReadResult> {
    if (extra === undefined && this.#p.local !== undefined) {
      const entry = this.near(keys.data);
      if (entry !== undefined) return { extra: undefined, entry };
    }
    const result: { extra: Reply | undefined; entry: Entry | undefined } = { extra: undefined, entry: undefined };
    result.entry = await this.#remote(keys, signal, extra, undefined, result);
    return result;
  }

  /**
   * Let no later caller join the read of `keys` in flight (this process
   * wrote or dropped it: a get that starts now must see that).
   */
  forget(keys: Keys): void {
    (keys as Partial<SharedKeys>).reading = undefined;
  }

  /** {@linkcode forget} every key (the epoch or a tag version moved). */
  forgetAll(): void {
    this.#generation++;
  }

  /**
   * What `key`'s stored entry looks like now (its windows against this
   * client's estimate of the server's clock), or `undefined` once its
   * physical lifetime is over or its clock is not measured yet. A value
   * this process served but could not store stands in for an older one.
   */
  age(key: string, stored: StoredEntry): Entry | undefined {
    const p = this.#p;
    if (p.unstored.size > 0) {
      const kept = p.unstored.over(
        key,
        stored,
        p.now(),
        (e) => p.versions.currentKnown(e.epoch, e.tags, e.tagVersions),
      );
      if (kept === undefined) return undefined;
      stored = kept;
    }
    return this.#aged(key, stored);
  }

  // The entry's windows against the server clock estimate now.
  #aged(key: string, stored: StoredEntry): Entry | undefined {
    const serverNow = this.#p.clock.at(key);
    if (serverNow === undefined) return undefined;
    const age = serverNow - stored.publishedAt;
    const pttl = stored.freshMs + stored.staleMs + stored.ifErrorMs - age;
    if (pttl <= 0) return undefined;
    return {
      value: stored.value,
      negative: stored.negative,
      pttl,
      freshMs: stored.freshMs - age,
      ageMs: age,
      staleMs: stored.staleMs,
      ifErrorMs: stored.ifErrorMs,
      loadMs: stored.loadMs,
      id: stored.id,
      tags: stored.tags,
    };
  }

  /**
   * The near tier's current entry for `key`, aged now; `undefined` when it
   * holds none, or one that is over or not known current (a clear() just
   * invalidated the epoch: a remote read then reads the tokens too).
   */
  near(key: string): Entry | undefined {
    const local = this.#p.local!;
    const stored = local.get(key);
    if (stored === undefined) return undefined;
    const current = this.#p.versions.currentKnown(stored.epoch, stored.tags, stored.tagVersions);
    if (current === undefined) return undefined;
    const entry = current ? this.age(key, stored) : undefined;
    if (entry === undefined) local.delete(key);
    return entry;
  }

  /**
   * What this process holds for `key` while Redis cannot be reached: its
   * near entry (kept through the outage or not) or the value it loaded and
   * could not store, aged now; `undefined` when it holds none, or one past
   * its windows. Versions cannot be read meanwhile: they are not checked.
   */
  local(key: string): { readonly entry: Entry; readonly near: boolean } | undefined {
    const p = this.#p;
    const near = p.local?.getEvenSuspect(key);
    const stored = near ?? p.unstored.kept(key, p.now(), false);
    const entry = stored === undefined ? undefined : this.#aged(key, stored);
    return entry === undefined ? undefined : { entry, near: near !== undefined };
  }

  /**
   * Whether a plain read of `key` is one command now: its server's clock is
   * measured and the versions are tracked (no epoch GET rides along), so
   * commandTimeoutMs bounds it.
   */
  direct(key: string): boolean {
    return this.#p.invalidations.active && this.#p.clock.known(key);
  }

  // The one read of Redis: the GET (after `extra`, beside the epoch when it
  // is not tracked), decoded, then checked and aged by #settle. `slot`: the
  // shared read this is, cleared once its reply is in; `out` receives the
  // reply of `extra`.
  async #remote(
    keys: Keys,
    signal: AbortSignal | undefined,
    extra: readonly Arg[] | undefined,
    slot: SharedKeys | undefined,
    out?: { extra: Reply | undefined },
  ): Promise<Entry | undefined> {
    const p = this.#p;
    const key = keys.data;
    // Once per server: the first read waits for its clock's first measurement.
    // The call's deadline bounds it: the measurement goes on for later calls.
    if (!p.clock.known(key)) await race(p.clock.sync(key), signal);
    const options = signal === undefined ? this.#plain : { ...this.#plain, signal };
    const marker = p.local === undefined ? undefined : p.invalidations.begin(key);
    const first = extra === undefined ? undefined : p.redis.send(extra, options);
    // Bytes only for a binary codec: text codecs take the client's string,
    // decoded once in the client, and the envelope header is read from it.
    const value = p.redis.send(
      ["GET", key],
      !p.codec.binary ? options : options === this.#plain ? this.#plainBytes : { ...options, buffers: true },
    );
    // Without tracking the epoch is not known between reads: it rides along.
    // With it, an epoch not known now (just started, just invalidated) is
    // read beside the GET rather than after it.
    // A failure of the epoch's GET names its key: on a cluster its server is
    // the one down, not the data key's (onRedisDown "local").
    const epoch = p.invalidations.active
      ? undefined
      : p.redis.send(["GET", p.versions.epochKey], options).catch((error) => {
        throw blame(error, p.versions.epochKey);
      });
    if (epoch === undefined) p.versions.prefetchEpoch();
    else p.versions.epochRead();
    let x: Reply | undefined;
    let raw: Reply;
    let epochNow: Reply | undefined;
    try {
      // The common case, one GET, awaits it alone.
      if (first === undefined && epoch === undefined) raw = await value;
      else [x, raw, epochNow] = await Promise.all([first, value, epoch]);
    } catch (error) {
      if (slot !== undefined) slot.reading = undefined;
      p.invalidations.end(marker);
      // A key of another type (another writer's list or hash) is a foreign
      // value like any other: a miss, which the next fill's SET overwrites.
      // Handled here rather than by a .catch() on every GET: hits pay nothing.
      if (!isRedisReplyError(error) || error.code !== "WRONGTYPE") throw error;
      p.emit({ type: "decode-error", key, error });
      if (out !== undefined) out.extra = await first;
      return undefined;
    }
    // Callers that start from here on read anew: this read's reply is in.
    if (slot !== undefined) slot.reading = undefined;
    if (out !== undefined) out.extra = x;
    // Nothing stored: a value this process loaded and Redis refused to store
    // stands in while no change of its key went unheard.
    const stored = raw !== null
      ? this.#decode(key, raw)
      : p.unstored.size > 0 && p.invalidations.active
      ? p.unstored.kept(key, p.now(), true)
      : undefined;
    if (stored === undefined) {
      p.invalidations.end(marker);
      return undefined;
    }
    // Aged without a further await when the versions and the clock are known.
    return this.#settle(key, stored, marker, epochNow, signal);
  }

  // The one place a decoded entry is checked: its epoch and tag versions
  // (from the epoch read beside it, else the known ones, else read now), and
  // the clock of the node that answered, measured if a MOVED sent the GET to
  // one never measured, rather than take the entry for a miss and load a
  // value Redis holds. Without an await when all is known.
  #settle(
    key: string,
    stored: StoredEntry,
    marker: Marker | undefined,
    epochNow: Reply | undefined,
    signal: AbortSignal | undefined,
  ): Entry | undefined | Promise<Entry | undefined> {
    const known = epochNow === undefined
      ? this.#p.versions.currentKnown(stored.epoch, stored.tags, stored.tagVersions)
      : undefined;
    if (known === false) return this.#keep(key, undefined, stored, marker);
    if (known === true) {
      const entry = this.age(key, stored);
      if (entry !== undefined || this.#p.clock.known(key)) return this.#keep(key, entry, stored, marker);
    }
    return this.#settleLater(key, stored, marker, known, epochNow, signal);
  }

  async #settleLater(
    key: string,
    stored: StoredEntry,
    marker: Marker | undefined,
    known: boolean | undefined,
    epochNow: Reply | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Entry | undefined> {
    const p = this.#p;
    const v = p.versions;
    let current: boolean;
    try {
      if (known !== undefined) current = known;
      else if (epochNow === null) current = false;
      else {
        const now = epochNow === undefined ? await race(v.epoch(), signal) : text(epochNow);
        current = await race(v.current(stored.epoch, now, stored.tags, stored.tagVersions), signal);
      }
      if (current && !p.clock.known(key)) await race(p.clock.sync(key), signal);
    } catch (error) {
      p.invalidations.end(marker);
      throw error;
    }
    return this.#keep(key, current ? this.age(key, stored) : undefined, stored, marker);
  }

  // Offer an aged entry to the near tier if no invalidation overtook its read.
  #keep(key: string, entry: Entry | undefined, stored: StoredEntry, marker: Marker | undefined): Entry | undefined {
    // Without a near tier no marker was taken: nothing to end, nothing to keep.
    if (marker !== undefined && this.#p.invalidations.end(marker) && entry !== undefined) {
      this.#p.local!.set(key, stored, this.#p.now() + entry.pttl);
    }
    return entry;
  }

  #decode(key: string, raw: Reply): StoredEntry | undefined {
    try {
      if (typeof raw !== "string" && !(raw instanceof Uint8Array)) {
        throw new Error(`expected a string value, got ${Array.isArray(raw) ? "an array" : typeof raw}`);
      }
      // Our client's bytes are a fresh copy of the value alone, kept as is. An
      // adapter's may be a view of a larger buffer (ioredis slices its socket
      // chunk): copied once, so a value the caller keeps never pins that.
      const own = typeof raw === "string" || raw.byteLength === raw.buffer.byteLength ? raw : raw.slice();
      return decodeStored(own, this.#codec);
    } catch (error) {
      // Another writer's value, an older format or corruption: a miss that
      // the next fill overwrites.
      this.#p.emit({ type: "decode-error", key, error });
      return undefined;
    }
  }
}

function text(reply: Reply): string {
  return replyText(reply) ?? String(reply);
}

/**
 * Whether a re-read entry may stand in for a load: fresh, and another
 * publication than the entry the read phase saw (an early refresh must not
 * take the very entry it is refreshing for a fresh one).
 */
export function accepts(entry: Entry | undefined, seen: Entry | undefined): entry is Entry {
  if (entry === undefined || entry.freshMs <= 0) return false;
  return seen === undefined || seen.freshMs <= 0 || entry.id !== seen.id;
}
