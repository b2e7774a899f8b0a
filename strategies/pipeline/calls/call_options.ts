/**
 * The options every cache method shares (`signal`, `timeoutMs`, `ttlMs`,
 * `tags`, and a read's `forceFresh`), checked once per call, and the frozen options of a call that
 * gave none. A call, here and in every name of this folder, is one
 * invocation of a cache method: its options are here, its deadline is
 * `CallDeadline` (`deadline.ts`).
 *
 * @module
 */
import { abortSignal, boolean, knownOptions, optionsObject, positiveInt } from "../../../resp/shared/mod.ts";
import type { GetOptions, SetOptions, WarmOptions } from "../../options.ts";
import { checkWindow } from "../../limits.ts";
import { checkTags } from "../fill/mod.ts";

/** What one call asked for, checked. */
export interface CallOptions {
  readonly signal: AbortSignal | undefined;
  readonly timeoutMs: number | undefined;
  readonly ttlMs: number;
  readonly tags: readonly string[];
  /** Serve no stored entry: load, and publish (`get`, `getEntry`, `getMany`). */
  readonly forceFresh: boolean;
}

const NO_TAGS: readonly string[] = Object.freeze([]);

/** The options of `get`, `getEntry` and `getMany`: any other key is refused, naming the close one. */
export const GET_OPTIONS: ReadonlySet<string> = new Set(
  Object.keys(
    { signal: true, timeoutMs: true, ttlMs: true, tags: true, forceFresh: true } satisfies Record<
      keyof GetOptions,
      true
    >,
  ),
);
/** The options of `set`. */
export const SET_OPTIONS: ReadonlySet<string> = new Set(
  Object.keys({ ttlMs: true, tags: true } satisfies Record<keyof SetOptions, true>),
);
/** The options of `warm`. */
export const WARM_OPTIONS: ReadonlySet<string> = new Set(
  Object.keys({ concurrency: true, signal: true, tags: true } satisfies Record<keyof WarmOptions, true>),
);

/** The options of a call that gave none: one frozen object per cache, so the hot path allocates nothing. */
export function defaultOptions(ttlMs: number): CallOptions {
  return Object.freeze({ signal: undefined, timeoutMs: undefined, ttlMs, tags: NO_TAGS, forceFresh: false });
}

/**
 * Check a call's options (the names `allowed` for its method) against the
 * cache's TTL and the strategies' check of a TTL; errors name `where` (the method). With `byDeadline` (one map per
 * cache), options giving a deadline alone come back as one frozen object per
 * value, so the hot path allocates nothing for them.
 */
export function callOptions(
  where: string,
  options: unknown,
  allowed: ReadonlySet<string>,
  ttlMs: number,
  checkTtl: (ttlMs: number) => void,
  byDeadline?: Map<number, CallOptions>,
): CallOptions {
  const o = optionsObject<GetOptions>(where, options);
  // A loop over a key or two and a set lookup each: the message and its
  // suggestion are built only for a key it does not know.
  for (const key in o) if (!allowed.has(key)) knownOptions(`${where}()`, o, allowed);
  if (o.signal !== undefined) abortSignal(where, "signal", o.signal);
  const timeoutMs = o.timeoutMs === undefined ? undefined : positiveInt(where, "timeoutMs", o.timeoutMs);
  if (
    byDeadline !== undefined && o.signal === undefined && o.ttlMs === undefined && o.tags === undefined &&
    o.forceFresh === undefined && timeoutMs !== undefined
  ) {
    let call = byDeadline.get(timeoutMs);
    if (call === undefined) {
      // Bounded: a program computing its deadlines per call starts over now and then.
      if (byDeadline.size >= 256) byDeadline.clear();
      byDeadline.set(
        timeoutMs,
        call = Object.freeze({ signal: undefined, timeoutMs, ttlMs, tags: NO_TAGS, forceFresh: false }),
      );
    }
    return call;
  }
  if (o.ttlMs !== undefined) {
    ttlMs = checkWindow(where, "ttlMs", o.ttlMs, 1);
    checkTtl(ttlMs);
  }
  const tags = o.tags === undefined ? NO_TAGS : checkTags(where, "tags", o.tags);
  const forceFresh = o.forceFresh === undefined ? false : boolean(where, "forceFresh", o.forceFresh);
  return { signal: o.signal, timeoutMs, ttlMs, tags, forceFresh };
}
