/**
 * The options every cache method shares (`signal`, `timeoutMs`, `ttlMs`,
 * `tags`), checked once per call, and the frozen options of a call that
 * gave none. A call, here and in every name of this folder, is one
 * invocation of a cache method: its options are here, its deadline is
 * `CallDeadline` (`deadline.ts`).
 *
 * @module
 */
import { optionsObject, positiveInt } from "../../../resp/shared/mod.ts";
import type { GetOptions } from "../../options.ts";
import { checkTags } from "../fill/mod.ts";

/** What one call asked for, checked. */
export interface CallOptions {
  readonly signal: AbortSignal | undefined;
  readonly timeoutMs: number | undefined;
  readonly ttlMs: number;
  readonly tags: readonly string[];
}

const NO_TAGS: readonly string[] = Object.freeze([]);

/** The options of a call that gave none: one frozen object per cache, so the hot path allocates nothing. */
export function defaultOptions(ttlMs: number): CallOptions {
  return Object.freeze({ signal: undefined, timeoutMs: undefined, ttlMs, tags: NO_TAGS });
}

/**
 * Check a call's options against the cache's TTL and the strategies' check
 * of a TTL; errors name `where` (the method).
 */
export function callOptions(
  where: string,
  options: unknown,
  ttlMs: number,
  checkTtl: (ttlMs: number) => void,
): CallOptions {
  const o = optionsObject<GetOptions>(where, options);
  const timeoutMs = o.timeoutMs === undefined ? undefined : positiveInt(where, "timeoutMs", o.timeoutMs);
  if (o.ttlMs !== undefined) {
    ttlMs = positiveInt(where, "ttlMs", o.ttlMs);
    checkTtl(ttlMs);
  }
  const tags = o.tags === undefined ? NO_TAGS : checkTags(where, "tags", o.tags);
  return { signal: o.signal, timeoutMs, ttlMs, tags };
}
