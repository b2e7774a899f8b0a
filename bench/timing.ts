/**
 * How the micro-benchmarks time one operation: run it in batches until `ms`
 * have passed, reading the clock once per batch so the clock's own cost
 * stays out of the figure.
 *
 * @module
 */

/** Nanoseconds per call of `fn`, over at least `ms` ms, calling it `batch` times between clock reads. */
export function nsPerOp(fn: () => unknown, ms: number, batch = 16): number {
  let n = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < batch; i++) fn();
    n += batch;
    now = performance.now();
  }
  return ((now - start) * 1e6) / n;
}
