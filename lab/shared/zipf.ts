/**
 * Zipf-distributed key choice: key i (0-based) is drawn with probability
 * proportional to 1 / (i + 1)^s, so a few keys are hot and most are cold,
 * like real cache traffic (s = 0: every key alike). The stampede lab's
 * steady loads and the chaos run's workers draw their keys from it, the
 * eviction benchmark too; its seeded source is also the tests' (`test/support/random.ts`).
 *
 * @module
 */

/** A sampler of key indexes in [0, n) drawn from `random` (uniform in [0, 1)). */
export function zipf(n: number, s: number, random: () => number = Math.random): () => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) cdf[i] = sum += 1 / (i + 1) ** s;
  for (let i = 0; i < n; i++) cdf[i] = cdf[i]! / sum;
  return () => {
    const u = random();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! > u) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
}

/** mulberry32: a tiny seeded source in [0, 1), so that rows compared side by side see the same key sequence. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
