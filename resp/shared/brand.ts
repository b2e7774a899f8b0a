/**
 * Brands that tell our errors apart from foreign ones with the same name.
 * `instanceof` fails when a Deno copy and an npm copy of herdless are both
 * loaded, and a name check alone accepts the `DOMException` named
 * "TimeoutError" that `AbortSignal.timeout()` throws (which has no
 * `waitedMs`). A brand is a non-enumerable property under a `Symbol.for` key:
 * the global symbol registry is shared by every copy of the package in a
 * realm, and nothing else sets it.
 *
 * @module
 */

/** Mark `error` as one of ours of kind `kind` (called by each error class' constructor). */
export function brand(error: Error, kind: string): void {
  Object.defineProperty(error, Symbol.for(`herdless.${kind}`), { value: true });
}

/** True when `value` was branded `kind` by any copy of herdless. */
export function hasBrand(value: unknown, kind: string): boolean {
  return value instanceof Error &&
    (value as unknown as Record<symbol, unknown>)[Symbol.for(`herdless.${kind}`)] === true;
}
