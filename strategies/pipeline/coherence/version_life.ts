/**
 * How long version keys live. A version key gets a TTL when it is created
 * (`VERSION_TTL_MS`, 24 h), and is extended back to it only when a process
 * uses it and less than half remains: a key nobody uses for a day goes, so
 * per-entity tags do not pile up forever, while a namespace or a tag in use
 * keeps its version. Extending on every publication instead would send an
 * invalidation to every tracking process each time (a version they must
 * read again, a near tier dropped for the epoch), and on a cluster a tag key
 * is in another slot than the publish script's keys.
 *
 * A use is a read of the key from Redis (its TTL is read beside it), a load
 * stamped with it, or a hit judged by it. A version kept in memory is
 * looked at by a sweep every `VERSION_TTL_MS / 8` (3 h): once past its
 * half-life it is marked, and its next use extends it, so a hit pays one
 * property read, never a clock read. An untracked cache reads the epoch
 * beside each data key and keeps nothing: it looks at the epoch's TTL at
 * most every `VERSION_TTL_MS / 4`.
 *
 * A key that expires anyway (unused for its TTL, or evicted) comes back as a
 * new random token: everything stamped with the old one is a miss, never
 * revived (see `versions.ts`).
 *
 * @module
 */
import { timeoutOptions } from "../../../resp/shared/mod.ts";
import type { RedisLike, SendOptions } from "../../../resp/types.ts";

/** How long a version key lives after it is created or extended, in ms: 24 h. */
export const VERSION_TTL_MS = 24 * 60 * 60 * 1000;

/** A version this process knows, and when its key wants extending. */
export interface KnownVersion {
  readonly key: string;
  readonly token: string;
  /** Local time (the cache's `now`) from which less than half of the key's TTL remains. */
  renewAt: number;
  /** Set by the sweep once `renewAt` has passed: the next use extends the key. */
  due: boolean;
}

/** What the life of version keys needs of its cache. */
export interface VersionLifeContext {
  readonly redis: RedisLike;
  readonly commandTimeoutMs: number;
  /** The local monotonic clock, in ms. */
  readonly now: () => number;
}

/** The TTLs of one cache's version keys. */
export class VersionLife {
  /** The TTL a version key is created or extended with, in ms: {@linkcode VERSION_TTL_MS}. */
  readonly ttlMs: number;
  readonly #cache: VersionLifeContext;
  readonly #options: SendOptions;
  readonly #records: () => Iterable<KnownVersion>;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #epochLookAt = -Infinity;

  /** @param records the versions kept in memory, which the sweep marks. */
  constructor(context: VersionLifeContext, records: () => Iterable<KnownVersion>) {
    this.#cache = context;
    this.ttlMs = VERSION_TTL_MS;
    this.#options = timeoutOptions(context.commandTimeoutMs, "commandTimeoutMs");
    this.#records = records;
  }

  /**
   * A key was read at `readAt` with `pttl` left (-1: none, as an older
   * version wrote it; -2: gone since). Extends it at once when less than
   * half its TTL remains; returns when it next wants extending.
   */
  read(key: string, pttl: number, readAt: number): number {
    const half = this.ttlMs / 2;
    if (pttl > half) return readAt + pttl - half;
    this.#extend(key);
    return readAt + half;
  }

  /** Track `known` from now on (the sweep looks at it). */
  keep(known: KnownVersion): void {
    if (known.renewAt <= this.#cache.now()) known.due = true;
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.sweep(), this.ttlMs / 8);
      // Nothing here may keep a process alive (workerd's timers have no unref).
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  /** A use of a known version: extends its key if the sweep found it past its half-life. */
  use(known: KnownVersion): void {
    if (!known.due) return;
    known.due = false;
    known.renewAt = this.#cache.now() + this.ttlMs / 2;
    // A failed extension marks it again for the next use; expiry is the fallback.
    this.#extend(known.key, () => (known.due = true));
  }

  /**
   * An untracked read took the epoch's token from `key` directly: at most
   * every `ttlMs / 4`, look at its TTL too and extend it when less than half remains.
   */
  epochRead(key: string): void {
    const now = this.#cache.now();
    if (now < this.#epochLookAt) return;
    this.#epochLookAt = now + this.ttlMs / 4;
    this.#cache.redis.send(["PTTL", key], this.#options).then(
      (pttl) => this.read(key, Number(pttl), now),
      () => (this.#epochLookAt = -Infinity), // looked at again by the next read
    );
  }

  /** Mark the versions past their half-life; runs every `ttlMs / 8` while some are kept. */
  sweep(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const now = this.#cache.now();
    let kept: KnownVersion | undefined;
    for (const known of this.#records()) {
      kept ??= known;
      if (known.renewAt <= now) known.due = true;
    }
    if (kept !== undefined) this.keep(kept);
  }

  /** Stop the sweep (nothing is kept any more: a reset, a close). */
  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #extend(key: string, failed?: () => void): void {
    this.#cache.redis.send(["PEXPIRE", key, this.ttlMs], this.#options).catch(() => failed?.());
  }
}
