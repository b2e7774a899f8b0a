/**
 * The per-call settings every cache method shares (`timeoutMs`, `ttlMs`,
 * `tags`), checked once here, and the frozen settings of a call that gave
 * none. A call, here and in every name of this folder, is one invocation of
 * a cache method: its settings are here, its deadline is `CallScope`
 * (`scope.ts`), and `BatchCall` and `WarmCall` are what one `getMany` and
 * one `warm` were given.
 *
 * @module
 */
import { positiveInt } from "../../resp/shared/mod.ts";
import type { Strategy } from "../types.ts";

/** What one call asked for, checked. */
export interface CallSettings {
  readonly timeoutMs: number | undefined;
  readonly ttlMs: number;
  readonly tags: readonly string[];
}

const NO_TAGS: readonly string[] = Object.freeze([]);
const defaults = new Map<number, CallSettings>();

/** The settings of a call that gave none: one frozen object per TTL, so the hot path allocates nothing. */
export function defaultCall(ttlMs: number): CallSettings {
  let call = defaults.get(ttlMs);
  if (call === undefined) defaults.set(ttlMs, call = Object.freeze({ timeoutMs: undefined, ttlMs, tags: NO_TAGS }));
  return call;
}

/** Check a call's options against the cache's TTL and strategies; errors name `where`. */
export function callSettings(
  where: string,
  o: { timeoutMs?: number; ttlMs?: number; tags?: readonly string[] },
  cache: { readonly ttlMs: number; readonly strategies: readonly Strategy[] },
): CallSettings {
  const timeoutMs = o.timeoutMs === undefined ? undefined : positiveInt(where, "timeoutMs", o.timeoutMs);
  let ttlMs = cache.ttlMs;
  if (o.ttlMs !== undefined) {
    ttlMs = positiveInt(where, "ttlMs", o.ttlMs);
    for (const s of cache.strategies) s.checkTtl?.(ttlMs);
  }
  const tags = o.tags === undefined ? NO_TAGS : checkTags(where, "tags", o.tags);
  return { timeoutMs, ttlMs, tags };
}

/** Throws unless `tags` is an array of non-empty strings; returns them without duplicates. */
export function checkTags(where: string, name: string, tags: unknown): readonly string[] {
  if (!Array.isArray(tags)) {
    throw new TypeError(`Cannot ${where}: '${name}' must be an array of strings, got ${typeof tags}`);
  }
  for (let i = 0; i < tags.length; i++) {
    if (typeof tags[i] !== "string" || tags[i].length === 0) {
      throw new TypeError(
        `Cannot ${where}: '${name}[${i}]' must be a non-empty string, got ${JSON.stringify(tags[i])}`,
      );
    }
  }
  return tags.length <= 1 ? tags : [...new Set(tags as string[])];
}
