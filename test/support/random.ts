/**
 * The one source of randomness in the tests. Every random draw (fast-check's
 * properties included) comes from `seed`: `HERDLESS_SEED` when it is set, else
 * one taken from the clock, so each run still explores new cases. The runner
 * prints the seed when a run fails; setting it again replays the same draws.
 */
import process from "node:process";
import { seeded as mulberry32 } from "../../lab/shared/zipf.ts";

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

// A generator of numbers in [0, 1) from a 32-bit state (mulberry32): the lab's, so that one is written once.
export { mulberry32 };

/**
 * The run's generator for one test: `seed` mixed with `stream`, so tests
 * drawing from streams of their own do not depend on each other's draws.
 */
export function random(stream = 0): () => number {
  return mulberry32(seed ^ Math.imul(stream + 1, 0x9e37_79b9));
}
