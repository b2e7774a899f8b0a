/**
 * How the lab's tables print numbers, the same in every table of the
 * stampede lab and the chaos run: counts with thousands separators,
 * milliseconds with one decimal below 10 (a hit is a fraction of one) and
 * whole above.
 *
 * @module
 */

/** A count: `12,345`. */
export function count(x: number): string {
  return x.toLocaleString("en-US");
}

/** Milliseconds: `0.4`, `9.9`, `12`, `1,034`. */
export function ms(x: number): string {
  return x < 10 ? x.toFixed(1) : count(Math.round(x));
}
