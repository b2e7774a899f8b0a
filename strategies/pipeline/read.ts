/**
 * The read phase: the entry of a key, from the near tier when it holds a
 * current one (no I/O), else from Redis with one command (`GET`; plus the
 * epoch's `GET` in the same round trip when the versions are not tracked),
 * decoded once and judged against this client's estimate of the server's
 * clock. A value written under an older epoch or tag version is a miss. A
 * remote read that no invalidation overtook is offered to the near tier.
 *
 * @module
 */
import { race } from "../../resp/shared/mod.ts";
import { isRedisReplyError } from "../../resp/errors.ts";
import type { Arg, RedisLike, Reply } from "../../resp/types.ts";
import type { ResolvedCodec } from "../codec.ts";
import type { CacheEvent, Entry, Keys, LocalTier, ReadResult, StoredEntry } from "../types.ts";
import type { ServerClock } from "./clock.ts";
import { decodeStored } from "./envelope.ts";
import type { Marker, Tracker } from "./tracking.ts";
import type { Versions } from "./versions.ts";

/** What the reader needs of its cache. */
export interface ReaderContext {
  readonly redis: RedisLike;
  readonly codec: ResolvedCodec;
  readonly commandTimeoutMs: number;
  readonly clock: ServerClock;
  readonly tracker: Tracker;
  readonly versions: Versions;
  /** The near tier, if the pipeline has one. */
  readonly local: LocalTier | undefined;
  /** The local monotonic clock (the cache's `now`). */
  readonly now: () => number;
  emit(event: CacheEvent): void;
}

/** A read's result, and whether it came from the near tier. */
export interface Read extends ReadResult {
  readonly near: boolean;
}

const MISS: Read = Object.freeze({ extra: undefined, entry: undefined, near: false });
const decoder = new TextDecoder();

/** Reads, decodes and judges the entries of one cache. */
export class Reader {
  readonly #c: ReaderContext;

  /** The options of a command without a caller's signal: one object for all. */
  readonly #plain: { readonly timeoutMs: number };
  readonly #plainBytes: { readonly timeoutMs: number; readonly buffers: true };

  constructor(context: ReaderContext) {
    this.#c = context;
    this.#plain = Object.freeze({ timeoutMs: context.commandTimeoutMs });
    this.#plainBytes = Object.freeze({ timeoutMs: context.commandTimeoutMs, buffers: true });
  }

  /**
   * The entry of `keys`: from the near tier when it holds a current one,
   * else from Redis in one round trip, after `extra` when given (an `extra`
   * always goes to Redis: the lease's `SET NX` must see the server).
   */
  read(keys: Keys, signal: AbortSignal | undefined, extra?: readonly Arg[]): Promise<Read> {
    if (extra === undefined && this.#c.local !== undefined) {
      const near = this.#near(keys.data);
      if (near !== undefined) return Promise.resolve(near);
    }
    return this.#remote(keys, signal, extra);
  }

  /** What `key`'s stored entry looks like now, or `undefined` once its physical lifetime is over. */
  judge(key: string, stored: StoredEntry): Entry | undefined {
    const serverNow = this.#c.clock.at(key);
    if (serverNow === undefined) return undefined;
    const age = serverNow - stored.publishedAt;
    const pttl = stored.freshMs + stored.staleMs + stored.ifErrorMs - age;
    if (pttl <= 0) return undefined;
    return {
      value: stored.value,
      negative: stored.negative,
      pttl,
      freshMs: stored.freshMs - age,
      staleMs: stored.staleMs,
      ifErrorMs: stored.ifErrorMs,
      loadMs: stored.loadMs,
      id: stored.id,
      tags: stored.tags,
    };
  }

  /**
   * The near tier's current entry for `key`, judged now; `undefined` when
   * it holds none, or one that is over or not known current (a clear() just
   * invalidated the epoch: a remote read then reads the tokens too).
   */
  near(key: string): Entry | undefined {
    const local = this.#c.local;
    const stored = local?.get(key);
    if (stored === undefined) return undefined;
    const current = this.#c.versions.currentKnown(stored.epoch, stored.tags, stored.tagVersions);
    if (current === undefined) return undefined;
    const entry = current ? this.judge(key, stored) : undefined;
    if (entry === undefined) local!.delete(key);
    return entry;
  }

  #near(key: string): Read | undefined {
    const entry = this.near(key);
    return entry === undefined ? undefined : { extra: undefined, entry, near: true };
  }

  /**
   * Whether a plain read of `key` may take the short path now: its server's
   * clock is measured and the versions are tracked (no epoch GET rides along).
   */
  direct(key: string): boolean {
    const c = this.#c;
    return c.tracker.active && c.clock.known(key);
  }

  /** The marker of a short-path read of `key` (only a near tier keeps reads). */
  begin(key: string): Marker | undefined {
    return this.#c.local === undefined ? undefined : this.#c.tracker.begin(key);
  }

  /** The short path's one command: the stored form of `key`, or null. */
  fetch(key: string): Promise<Reply> {
    const c = this.#c;
    const reply = c.redis.send(["GET", key], c.codec.binary ? this.#plainBytes : this.#plain);
    c.versions.prefetchEpoch();
    return reply;
  }

  /**
   * What a short-path read whose GET failed reads as: a key of another type
   * is a miss; anything else is thrown.
   */
  failed(key: string, marker: Marker | undefined, error: unknown): undefined {
    this.#c.tracker.end(marker);
    if (!isRedisReplyError(error) || error.code !== "WRONGTYPE") throw error;
    this.#c.emit({ type: "decode-error", key, error });
    return undefined;
  }

  /**
   * The entry a short-path read's reply holds, judged now: without an await
   * when the versions it was written under are known (a hit pays no further
   * promise), else a promise of it.
   */
  settle(key: string, raw: Reply, marker: Marker | undefined): Entry | undefined | Promise<Entry | undefined> {
    const stored = raw === null ? undefined : this.#decode(key, raw);
    if (stored === undefined) {
      this.#c.tracker.end(marker);
      return undefined;
    }
    const known = this.#c.versions.currentKnown(stored.epoch, stored.tags, stored.tagVersions);
    // A MOVED may have sent the GET to a node whose clock is not measured yet.
    return known === undefined || (known && !this.#c.clock.known(key))
      ? this.#settleLater(key, stored, marker, known)
      : this.#keep(key, stored, known, marker);
  }

  async #settleLater(
    key: string,
    stored: StoredEntry,
    marker: Marker | undefined,
    known: boolean | undefined,
  ): Promise<Entry | undefined> {
    const versions = this.#c.versions;
    let current: boolean;
    try {
      current = known ??
        await versions.current(stored.epoch, await versions.epoch(), stored.tags, stored.tagVersions);
      if (current && !this.#c.clock.known(key)) await this.#c.clock.sync(key);
    } catch (error) {
      this.#c.tracker.end(marker);
      throw error;
    }
    return this.#keep(key, stored, current, marker);
  }

  // Judge a decoded entry and offer it to the near tier if no invalidation
  // overtook its read.
  #keep(key: string, stored: StoredEntry, current: boolean, marker: Marker | undefined): Entry | undefined {
    const entry = current ? this.judge(key, stored) : undefined;
    if (this.#c.tracker.end(marker) && entry !== undefined) {
      this.#c.local!.set(key, stored, this.#c.now() + entry.pttl);
    }
    return entry;
  }

  async #remote(keys: Keys, signal: AbortSignal | undefined, extra: readonly Arg[] | undefined): Promise<Read> {
    const c = this.#c;
    const key = keys.data;
    // Once per server: the first read waits for its clock's first measurement.
    // The call's deadline bounds it: the measurement goes on for later calls.
    if (c.clock.at(key) === undefined) await race(c.clock.sync(key), signal);
    const options = signal === undefined ? this.#plain : { timeoutMs: c.commandTimeoutMs, signal };
    const marker = c.local === undefined ? undefined : c.tracker.begin(key);
    const first = extra === undefined ? undefined : c.redis.send(extra, options);
    // Bytes only for a binary codec: text codecs take the client's string,
    // decoded once in the client, and the envelope header is read from it.
    const value = c.redis.send(
      ["GET", key],
      !c.codec.binary ? options : options === this.#plain ? this.#plainBytes : { ...options, buffers: true },
    );
    // Without tracking the epoch is not known between reads: it rides along.
    // With it, an epoch not known now (just started, just invalidated) is
    // read beside the GET rather than after it.
    const epoch = c.tracker.active ? undefined : c.redis.send(["GET", c.versions.epochKey], options);
    if (epoch === undefined) c.versions.prefetchEpoch();
    let x: Reply | undefined;
    let raw: Reply;
    let epochNow: Reply | undefined;
    try {
      // The common case, one GET, awaits it alone.
      if (first === undefined && epoch === undefined) raw = await value;
      else [x, raw, epochNow] = await Promise.all([first, value, epoch]);
    } catch (error) {
      c.tracker.end(marker);
      // A key of another type (another writer's list or hash) is a foreign
      // value like any other: a miss, which the next fill's SET overwrites.
      // Handled here rather than by a .catch() on every GET: hits pay nothing.
      if (!isRedisReplyError(error) || error.code !== "WRONGTYPE") throw error;
      c.emit({ type: "decode-error", key, error });
      return { extra: await first, entry: undefined, near: false };
    }
    const stored = raw === null ? undefined : this.#decode(key, raw);
    if (stored === undefined) {
      c.tracker.end(marker);
      return x === undefined ? MISS : { extra: x, entry: undefined, near: false };
    }
    let current: boolean;
    try {
      if (epochNow !== undefined) {
        current = epochNow !== null &&
          await race(c.versions.current(stored.epoch, text(epochNow), stored.tags, stored.tagVersions), signal);
      } else {
        const v = c.versions;
        current = v.currentKnown(stored.epoch, stored.tags, stored.tagVersions) ??
          await race(v.epoch().then((now) => v.current(stored.epoch, now, stored.tags, stored.tagVersions)), signal);
      }
      // A MOVED answered during the read (a migrated slot, a failover) and
      // the reply came from a node whose clock was never measured: measure it
      // rather than judge the entry a miss and load a value Redis holds.
      if (current && c.clock.at(key) === undefined) await race(c.clock.sync(key), signal);
    } catch (error) {
      c.tracker.end(marker);
      throw error;
    }
    return { extra: x, entry: this.#keep(key, stored, current, marker), near: false };
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
      return decodeStored(own, this.#c.codec.decode);
    } catch (error) {
      // Another writer's value, an older format or corruption: a miss that
      // the next fill overwrites.
      this.#c.emit({ type: "decode-error", key, error });
      return undefined;
    }
  }
}

function text(reply: Reply): string {
  return reply instanceof Uint8Array ? decoder.decode(reply) : String(reply);
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
