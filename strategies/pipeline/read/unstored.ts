/**
 * Values this process served but Redis refused to store (fail-open under
 * OOM or READONLY). Without them, a process that handed a caller the
 * origin's fresh value would go on serving the older value Redis still
 * holds, or one an older load publishes later (its lease was taken before
 * writes were refused): a value served, then an older one. Each unstored
 * value is kept as the entry it would have been, and while it lasts a read
 * of its key that finds an older entry serves it instead, judged by the
 * same windows as a stored entry (so it goes stale and is refreshed like
 * one). A newer entry, a later load of its key stored by this process, an
 * invalidation of its key, tags or epoch by this process, or its own
 * deadline retires it. A change of its key heard from another writer does
 * not (it may be an older load publishing late), but the value then no
 * longer stands in for a missing entry. One whose epoch or tags are no
 * longer current is not served, and neither is the older entry found: the
 * read is a miss, and the load that follows decides.
 *
 * "Older" compares when loads started, in server time (publishedAt less
 * loadMs; the publishing script makes loadMs reach back to when the load
 * began, so a write that arrived late is not taken for a later load): an
 * entry published before the unstored value's load ended is older when its
 * load started before that load did; one published after it when its load
 * started before that load ended (such an entry was never
 * served here before the unstored value, so preferring the unstored value
 * serves nothing older than what was served). A stored entry whose load
 * began within {@linkcode SIMULTANEOUS_MS} of that mark counts as older.
 *
 * @module
 */
import type { StoredEntry } from "../../contract.ts";
import type { InvalidationConsumer } from "../coherence/mod.ts";

const MAX_KEPT = 10_000;
/**
 * Loads of one key that began less than this apart, one here and one in
 * another process, have no order this process can tell. Each start is that
 * process' estimate of the server's clock, already widened by the estimate's
 * error (half the round trip it was measured over: a stored entry's start is
 * the earliest it may have been, a kept value's the latest); what is left is
 * each local clock's drift since its estimate was measured, and rounding to
 * the ms. The value served here wins, since it was served: an entry
 * stored elsewhere must have begun clearly later to retire it. Of two values
 * kept here (both served here, their starts on the local clock) the later
 * start wins outright.
 */
const SIMULTANEOUS_MS = 20;

interface Kept {
  readonly entry: StoredEntry;
  /** When its load began, on the local monotonic clock. */
  readonly began: number;
  /** When it goes, on the local monotonic clock. */
  readonly until: number;
  /** The cache's count of resets when it was kept: a reset since, and its key may have changed unheard. */
  readonly generation: number;
  /**
   * Another writer changed its key since (heard). The kept value is not
   * dropped for that: the change may be an older load publishing late,
   * which a read must still find older. It no longer stands in for a
   * missing entry, though: a key emptied since was emptied on purpose.
   */
  changed: boolean;
}

/** The unstored values of one cache, by data key. */
export class Unstored implements InvalidationConsumer {
  readonly #kept = new Map<string, Kept>();
  #generation = 0;

  /** How many values are kept (0 costs a read nothing). */
  get size(): number {
    return this.#kept.size;
  }

  /**
   * Keep `entry`, served by this process but not stored, until `until`
   * (local clock, now `now`), unless the value kept for `key` is newer.
   * Its load began at `began` (local clock); its `publishedAt` is the latest
   * the server's clock may have read when that load ended.
   */
  keep(key: string, entry: StoredEntry, until: number, now: number, began: number): void {
    const kept = this.#kept.get(key);
    // Two loads of one key may run at once here (a background refresh beside
    // a caller's load, a flight its callers left): the older one can end
    // last, and must not displace the newer value already served. Both were
    // served here, so only their starts count, on the local clock (the
    // estimate of the server's may have moved between them).
    if (kept !== undefined && now < kept.until && began <= kept.began) return;
    this.#kept.delete(key);
    // Bounded: the oldest goes first.
    if (this.#kept.size >= MAX_KEPT) this.#kept.delete(this.#kept.keys().next().value!);
    this.#kept.set(key, { entry, until, began, generation: this.#generation, changed: false });
  }

  /**
   * What a read of `key` that found `stored` is to judge: the kept entry
   * when `stored` is older, else `stored` (a newer one retires the kept
   * entry). `current` says whether the kept entry's epoch and tags are
   * still current (`undefined`: not known now); when they are not, or not
   * known, the read is a miss (`undefined`), so a load decides.
   */
  over(
    key: string,
    stored: StoredEntry,
    now: number,
    current: (entry: StoredEntry) => boolean | undefined,
  ): StoredEntry | undefined {
    const kept = this.#kept.get(key);
    if (kept === undefined) return stored;
    if (now >= kept.until || !older(stored, kept.entry)) {
      this.#kept.delete(key);
      return stored;
    }
    // The stored entry is older than the kept one. A kept value whose epoch
    // or tags are not current (another process' clear(), or a token made up
    // here while writes were refused and its key was evicted, since replaced
    // by a real one) is not served; nor is the older entry, which would move
    // back. A miss: a load decides, and its value retires this one.
    return current(kept.entry) === true ? kept.entry : undefined;
  }

  /**
   * The value kept for `key`, while it lasts (its deadline, on the local
   * clock now `now`): what a get is served when Redis cannot be reached, or
   * (`heard`) has no entry for the key because it refused the write. In the
   * second case only while every change of the key since was heard (no
   * reset since it was kept): another process' `invalidate()` of it is then
   * an invalidation that retired it.
   */
  kept(key: string, now: number, heard: boolean): StoredEntry | undefined {
    const kept = this.#kept.get(key);
    if (kept === undefined) return undefined;
    if (now >= kept.until) {
      this.#kept.delete(key);
      return undefined;
    }
    return heard && (kept.changed || kept.generation !== this.#generation) ? undefined : kept.entry;
  }

  /**
   * Another writer changed these keys: what is kept for them no longer
   * stands in for a missing entry (an entry found is still compared with it).
   */
  invalidate(keys: readonly string[]): void {
    if (this.#kept.size === 0) return;
    for (const key of keys) {
      const kept = this.#kept.get(key);
      if (kept !== undefined) kept.changed = true;
    }
  }

  /** Anything may have changed unheard: kept values no longer stand in for a missing entry. */
  reset(): void {
    this.#generation++;
  }

  /**
   * A load of `key` that began at `began` (local clock) was stored: it
   * retires the value kept for `key` if it began later (an older load that
   * published only now must not).
   */
  stored(key: string, began: number): void {
    const kept = this.#kept.get(key);
    if (kept !== undefined && kept.began < began) this.#kept.delete(key);
  }

  /** Retire the value kept for `key` (this process invalidated or set it). */
  forget(key: string): void {
    this.#kept.delete(key);
  }

  /** Retire the values carrying any of `tags`. */
  forgetTags(tags: readonly string[]): void {
    for (const [key, kept] of this.#kept) {
      if (kept.entry.tags.some((tag) => tags.includes(tag))) this.#kept.delete(key);
    }
  }

  /** Retire every kept value (clear()). */
  clear(): void {
    this.#kept.clear();
  }
}

/** When the load of `entry` began, in server time. */
function began(entry: StoredEntry): number {
  return entry.publishedAt - entry.loadMs;
}

/**
 * Whether `stored`'s load started before `kept`'s value was loaded, or less
 * than {@linkcode SIMULTANEOUS_MS} after (see the module's doc).
 */
function older(stored: StoredEntry, kept: StoredEntry): boolean {
  const mark = stored.publishedAt > kept.publishedAt ? kept.publishedAt : began(kept);
  return began(stored) <= mark + SIMULTANEOUS_MS;
}
