/**
 * The near-cache scenario's accounting: which reads were stale and how long
 * each write took to reach each reader process, from stamps taken in
 * different processes on one monotonic clock (`process.hrtime.bigint()` is
 * CLOCK_MONOTONIC on Linux: one clock for every process on the machine, no
 * wall-clock step in it). Pure functions over plain numbers, so a test can
 * feed synthetic stamps.
 *
 * A read is stale when it returned a version older than one whose `set()`
 * the writer had already seen acknowledged before the read started. A read
 * that overlaps the write is not stale: either answer is correct for it.
 *
 * @module
 */

/** One acknowledged write: key `key` now holds `version`; stamps in ns since the run's base. */
export interface Write {
  key: number;
  version: number;
  /** When the writer sent the `set()`. */
  sentNs: number;
  /** When the writer's `set()` resolved: Redis had applied it. */
  ackNs: number;
}

/** One read by one process; stamps in ns since the run's base. */
export interface Read {
  key: number;
  /** The version the read returned. */
  version: number;
  /** Before `get()` was called. */
  startNs: number;
  /** When `get()` resolved. */
  endNs: number;
}

/** What {@linkcode account} finds. */
export interface Accounting {
  reads: number;
  /** Reads that returned a version older than one acknowledged before they started. */
  stale: number;
  /** For each stale read, how long after that newer version's acknowledgement it started, ns. */
  staleAfterAckNs: number[];
  /** When each stale read started, ns since the base, sorted (for the chart). */
  staleAtNs: number[];
  /**
   * Per write and reader process: from the write's acknowledgement to the end
   * of the process's first read that returned that version or a newer one,
   * ns, sorted (0 when such a read ended before the acknowledgement).
   */
  lagNs: number[];
  /** (write, process) pairs where the process never read the version or a newer one. */
  unseen: number;
}

/**
 * Count stale reads exactly and measure the coherence lag.
 *
 * @param writes every acknowledged write, any order (one writer: a key's versions rise with its acks).
 * @param processes the reads of each reader process, each list in any order.
 * @returns the counts and the lag distribution.
 */
export function account(writes: readonly Write[], processes: readonly (readonly Read[])[]): Accounting {
  // Per key, above[u + 1] = the earliest acknowledgement of any version above u
  // (u = -1: a value never published). A read of u that started after it is stale.
  const byKey = new Map<number, Write[]>();
  for (const w of writes) {
    const list = byKey.get(w.key) ?? [];
    list.push(w);
    byKey.set(w.key, list);
  }
  const above = new Map<number, Float64Array>();
  for (const [key, list] of byKey) {
    const top = Math.max(...list.map((w) => w.version));
    const a = new Float64Array(top + 2).fill(Infinity);
    for (const w of list) a[w.version] = Math.min(a[w.version]!, w.ackNs);
    // Now a[v] = ack(v); a suffix minimum makes a[j] the first ack of any version >= j.
    for (let i = top; i >= 0; i--) a[i] = Math.min(a[i]!, a[i + 1]!);
    above.set(key, a);
  }
  const out: Accounting = { reads: 0, stale: 0, staleAfterAckNs: [], staleAtNs: [], lagNs: [], unseen: 0 };
  for (const reads of processes) {
    out.reads += reads.length;
    for (const r of reads) {
      const a = above.get(r.key);
      const u = Math.max(-1, r.version);
      // A version newer than any acknowledged one (its write still unacknowledged) is never stale.
      const ack = a === undefined || u + 1 >= a.length ? Infinity : a[u + 1]!;
      if (ack < r.startNs) {
        out.stale++;
        out.staleAfterAckNs.push(r.startNs - ack);
        out.staleAtNs.push(r.startNs);
      }
    }
    // Lag: per key, reads by end time with the highest version returned so far (never
    // decreasing), so a write's first sighting is a binary search.
    const perKey = new Map<number, Read[]>();
    for (const r of reads) {
      const list = perKey.get(r.key) ?? [];
      list.push(r);
      perKey.set(r.key, list);
    }
    const seen = new Map<number, { ends: Float64Array; best: Float64Array }>();
    for (const [key, list] of perKey) {
      list.sort((x, y) => x.endNs - y.endNs);
      const ends = Float64Array.from(list, (r) => r.endNs);
      const best = new Float64Array(list.length);
      let max = -Infinity;
      list.forEach((r, i) => (best[i] = max = Math.max(max, r.version)));
      seen.set(key, { ends, best });
    }
    for (const w of writes) {
      const s = seen.get(w.key);
      const i = s === undefined ? -1 : firstAtLeast(s.best, w.version);
      if (i === -1) out.unseen++;
      else out.lagNs.push(Math.max(0, s!.ends[i]! - w.ackNs));
    }
  }
  out.lagNs.sort((a, b) => a - b);
  out.staleAfterAckNs.sort((a, b) => a - b);
  out.staleAtNs.sort((a, b) => a - b);
  return out;
}

// The first index of non-decreasing `xs` holding at least `v`, or -1.
function firstAtLeast(xs: Float64Array, v: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo < xs.length ? lo : -1;
}

/** The q-quantile of sorted `xs` (nearest rank), or 0 when empty. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return 0;
  return xs[Math.min(xs.length - 1, Math.max(0, Math.ceil(q * xs.length) - 1))]!;
}
