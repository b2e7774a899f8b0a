/**
 * The one source of randomness in the tests. Every random draw (fast-check's
 * properties included) comes from `seed`: `HERDLESS_SEED` when it is set, else
 * one taken from the clock, so each run still explores new cases. The runner
 * prints the seed when a run fails; setting it again replays the same draws.
 */
import process from "node:process";

function readSeed(): number {
  const text = process.env.HERDLESS_SEED;
  if (text === undefined || text === "") return (Date.now() ^ Math.floor(performance.now() * 1000)) >>> 0;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0 || value > 0xffff_ffff) {
    throw new RangeError(`HERDLESS_SEED must be an integer from 0 to 4294967295, got ${JSON.stringify(text)}`);
  }
  return value;
}

/** The seed of this run (an unsigned 32-bit integer). */
export const seed: number = readSeed();

/** A generator of numbers in [0, 1) from a 32-bit state (mulberry32): the same `seed` gives the same numbers. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b_79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * The run's generator for one test: `seed` mixed with `stream`, so tests
 * drawing from streams of their own do not depend on each other's draws.
 */
export function random(stream = 0): () => number {
  return mulberry32(seed ^ Math.imul(stream + 1, 0x9e37_79b9));
}
