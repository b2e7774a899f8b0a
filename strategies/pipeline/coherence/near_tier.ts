/**
 * The near tier kept coherent: it forgets what Redis invalidates, and
 * everything on a reset (a flush, a lost connection) or when the namespace
 * epoch moves (every entry under the old one is a miss).
 *
 * With `onRedisDown: "local"`, a lost connection does not drop the tier:
 * its entries may have missed invalidations from then on, so they become
 * suspect, served only while Redis cannot be reached (stale-only, by the
 * get's local path), and dropped as soon as Redis answers again.
 *
 * @module
 */
import type { LocalTier, StoredEntry } from "../../contract.ts";
import type { CacheEvent } from "../../events.ts";
import type { InvalidationConsumer } from "./invalidations.ts";

/** A cache's near tier, with the coherence rules around the strategy's store. */
export class NearTier implements InvalidationConsumer {
  readonly #tier: LocalTier;
  readonly #epochKey: string;
  readonly #emit: (event: CacheEvent) => void;
  readonly #retainOnLoss: (() => boolean) | undefined;
  #suspect = false;

  /**
   * @param tier the store a strategy declared (`near()`).
   * @param epochKey the namespace's epoch key: its invalidation drops everything.
   * @param emit where `near-invalidation` events go.
   * @param retainOnLoss with `onRedisDown: "local"`: whether a reset now is a lost connection (keep the entries, suspect).
   */
  constructor(
    tier: LocalTier,
    epochKey: string,
    emit: (event: CacheEvent) => void,
    retainOnLoss?: () => boolean,
  ) {
    this.#tier = tier;
    this.#epochKey = epochKey;
    this.#emit = emit;
    this.#retainOnLoss = retainOnLoss;
  }

  /** Entries held now. */
  get size(): number {
    return this.#tier.size;
  }

  /** The most entries it holds. */
  get maxEntries(): number {
    return this.#tier.maxEntries;
  }

  /** The entry held for `key`, unless the tier is suspect (then only the local path may serve it). */
  get(key: string): StoredEntry | undefined {
    return this.#suspect ? undefined : this.#tier.get(key);
  }

  /** The entry held for `key`, suspect or not: for a get served while Redis cannot be reached. */
  getEvenSuspect(key: string): StoredEntry | undefined {
    return this.#tier.get(key);
  }

  /** Hold `entry` until `deadline` (local clock). */
  set(key: string, entry: StoredEntry, deadline: number): void {
    this.#tier.set(key, entry, deadline);
  }

  /** Drop `key`. */
  delete(key: string): boolean {
    return this.#tier.delete(key);
  }

  /** Drop everything, telling how many. */
  drop(): void {
    this.#suspect = false;
    const dropped = this.#tier.size;
    this.#tier.clear();
    if (dropped > 0) this.#emit({ type: "near-invalidation", key: undefined, count: dropped });
  }

  /** Redis answers again: entries kept through the outage are dropped (their invalidations may be lost). */
  trust(): void {
    if (this.#suspect) this.drop();
  }

  invalidate(keys: readonly string[]): void {
    let dropped = 0;
    let all = false;
    for (const key of keys) {
      if (key === this.#epochKey) all = true;
      else if (this.#tier.delete(key)) dropped++;
    }
    if (all) {
      dropped += this.#tier.size;
      this.#tier.clear();
    }
    if (dropped > 0) {
      this.#emit({ type: "near-invalidation", key: keys.length === 1 ? keys[0] : undefined, count: dropped });
    }
  }

  reset(): void {
    if (this.#retainOnLoss?.() === true) this.#suspect = true;
    else this.drop();
  }
}
