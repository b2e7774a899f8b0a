/**
 * The handler of a rejection that needs none (`.catch(ignore)`): fire and
 * forget work whose failure is reported elsewhere or retried later.
 *
 * @module
 */

/** Does nothing. */
export function ignore(): void {}
