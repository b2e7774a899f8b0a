/**
 * swr's soft timeout: a caller in the error window (an old value may be
 * served if the load fails) that has waited `softTimeoutMs` for the load
 * gets the old value instead, while the load goes on. The load is the
 * fill the cache already tracks (`close()` drains it), so it still publishes
 * for everyone, and a failure after the caller left is counted, never thrown.
 *
 * @module
 */
import { clearTimeout, setTimeout } from "node:timers";
import type { Strategy } from "../types.ts";

/** The pipeline's soft timeout (swr's `softTimeoutMs`), if a strategy sets one. */
export function softTimeoutOf(strategies: readonly Strategy[]): number | undefined {
  return strategies.find((s) => s.softTimeoutMs !== undefined)?.softTimeoutMs;
}

/** What {@linkcode softRace} resolves when the soft timeout came first. */
export const SOFT: unique symbol = Symbol("herdless.soft-timeout");

/**
 * `fill`'s result, or {@linkcode SOFT} once `ms` passed first. The timer is
 * cleared when the fill settles first; a fill that fails after the soft
 * timeout rejects nothing (its failure is the cache's to count).
 */
export function softRace<T>(fill: Promise<T>, ms: number): Promise<T | typeof SOFT> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(SOFT), ms);
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
