/**
 * `cacheStatus()`: an RFC 9211 `Cache-Status` field value for one
 * `getEntry` result, so an HTTP handler can tell its clients (and its own
 * logs) whether a response came from the cache.
 *
 * @module
 */
import { checkedOptions } from "../../../resp/shared/mod.ts";
import type { CacheResult } from "../../types.ts";

/** Options of {@linkcode cacheStatus}. */
export interface CacheStatusOptions {
  /**
   * The cache's name in the field (a token, or any printable ASCII, then
   * written as a quoted string).
   *
   * @default {"herdless"}
   */
  name?: string;
}

const CACHE_STATUS_OPTIONS = Object.keys({ name: true } satisfies Record<keyof CacheStatusOptions, true>);

// RFC 8941 sf-token: ALPHA or "*" first, then tchar, ":" or "/".
const TOKEN = /^[A-Za-z*][A-Za-z0-9!#$%&'*+\-.^_`|~:/]*$/;
const PRINTABLE = /^[\x20-\x7e]*$/;

/**
 * The RFC 9211 `Cache-Status` field value of a `getEntry` result, one member
 * for the cache as a whole, computed from the result's fields alone:
 * `herdless; hit; ttl=42` for a hit (`ttl` is `freshForMs` in whole seconds,
 * rounded down), `herdless; hit; ttl=-3` for a stale one, and
 * `herdless; fwd=miss` for a load, plus `; stored` when the load was stored.
 * A load that answered `ctx.notModified()` revalidated the entry it had:
 * `herdless; fwd=stale; fwd-status=304; stored`. A near-tier hit adds
 * `; detail=near`; a value served without Redis storing it says why
 * instead: `; detail=redis-down` or `; detail=write-refused`.
 *
 * @param result what `cache.getEntry()` resolved.
 * @param options the cache's name in the field.
 * @returns the field value, for `Cache-Status` (append it to one a proxy in front already set).
 * @throws {TypeError} when `result` is not a result or `name` is not printable ASCII.
 *
 * @example Tell HTTP clients what the cache did
 * ```ts
 * import { cacheStatus, connect, pipeline } from "@herdless/herdless";
 * const redis = await connect(process.env.REDIS_URL);
 * const cache = pipeline<string>({ redis, ttlMs: 60_500 });
 * await cache.invalidate("status-example");
 * const first = await cache.getEntry("status-example", () => "hello");
 * console.log(cacheStatus(first)); // herdless; fwd=miss; stored
 * const second = await cache.getEntry("status-example", () => "hello");
 * console.log(cacheStatus(second, { name: "api-cache" })); // api-cache; hit; ttl=60
 * await cache.close();
 * await redis.close();
 * ```
 */
export function cacheStatus(result: CacheResult<unknown>, options?: CacheStatusOptions): string {
  const o = checkedOptions<CacheStatusOptions>("write Cache-Status", "cacheStatus()", options, CACHE_STATUS_OPTIONS);
  const name = o.name ?? "herdless";
  if (typeof name !== "string" || name.length === 0 || !PRINTABLE.test(name)) {
    throw new TypeError(
      `Cannot write Cache-Status: 'name' must be a non-empty string of printable ASCII, got ${
        typeof name === "string" ? JSON.stringify(name) : typeof name
      }`,
    );
  }
  if (
    result === null || typeof result !== "object" || typeof result.freshForMs !== "number" ||
    !Number.isFinite(result.freshForMs) || !["near", "redis", "origin"].includes(result.source)
  ) {
    throw new TypeError("Cannot write Cache-Status: 'result' must be what getEntry() resolved");
  }
  const member = TOKEN.test(name) ? name : `"${name.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
  // RFC 9211 fixes the fwd values; why Redis was left out goes in detail.
  const detail = result.degraded ? `; detail=${result.degraded}` : result.source === "near" ? "; detail=near" : "";
  if (result.source === "origin") {
    const fwd = result.notModified === true ? "fwd=stale; fwd-status=304" : "fwd=miss";
    return `${member}; ${fwd}${result.stored ? "; stored" : ""}${detail}`;
  }
  const ttl = Math.floor(result.freshForMs / 1000);
  return `${member}; hit; ttl=${ttl}${detail}`;
}
