/**
 * Views into a client's private state for tests, kept off its public API.
 * The client hands over a reader from a static block (only the class itself
 * can read its `#private` fields); a test imports the function here.
 * Internal; never re-exported.
 *
 * @module
 */

let readDeadlines: ((client: object) => number) | undefined;

/** Called once by `RedisClient`'s static block with the function that reads its deadline heap's size. */
export function exposeDeadlines(read: (client: object) => number): void {
  readDeadlines = read;
}

/**
 * How many commands of `client` (a `RedisClient`) have a timeout still
 * watched by its deadline heap; an answered command must leave it at once.
 *
 * @throws {TypeError} when `client` is not a `RedisClient`.
 */
export function watchedDeadlines(client: object): number {
  if (readDeadlines === undefined) throw new TypeError("watchedDeadlines: resp/client.ts is not loaded");
  return readDeadlines(client);
}

/** What one overdue check of a connection decided (see `Connection.watchOverdue`). */
export type OverdueVerdict = "reset" | "watching" | "replied";

let overdueObserver: ((verdict: OverdueVerdict) => void) | undefined;

/**
 * Calls `observer` with the verdict of every overdue check that runs from
 * now on, in any client (`undefined` stops it), so a test can wait for the
 * check it is about instead of sleeping past it.
 */
export function observeOverdueChecks(observer: ((verdict: OverdueVerdict) => void) | undefined): void {
  overdueObserver = observer;
}

/** Called by `Connection` each time an overdue check runs. */
export function reportOverdueCheck(verdict: OverdueVerdict): void {
  overdueObserver?.(verdict);
}
