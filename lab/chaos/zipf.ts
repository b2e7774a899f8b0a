/**
 * Zipf-distributed key choice: key i (0-based) is drawn with probability
 * proportional to 1 / (i + 1)^s, so a few keys are hot and most are cold,
 * like real cache traffic.
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
