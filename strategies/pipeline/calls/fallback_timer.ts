/**
 * The fallback timer (swr's soft timeout, declared when it attaches): a
 * caller whose miss has a fallback (an old value served if the load fails)
 * that has waited `ms` for the load gets the fallback instead, while the
 * load goes on. The load is the
 * fill the cache already tracks (`close()` drains it), so it still publishes
 * for everyone, and a failure after the caller left is counted, never thrown.
 *
 * @module
 */
import { clearTimeout, setTimeout } from "node:timers";

/** What {@linkcode fallbackRace} resolves when the timer came first. */
export const FALLBACK: unique symbol = Symbol("herdless.fallback");

/**
 * `fill`'s result, or {@linkcode FALLBACK} once `ms` passed first. The timer is
 * cleared when the fill settles first; a fill that fails after the soft
 * timeout rejects nothing (its failure is the cache's to count).
 */
export function fallbackRace<T>(fill: Promise<T>, ms: number): Promise<T | typeof FALLBACK> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(FALLBACK), ms);
    fill.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
