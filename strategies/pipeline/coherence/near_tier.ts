/**
 * The near tier kept coherent: it forgets what Redis invalidates, and
 * everything on a reset (a flush, a lost connection) or when the namespace
 * epoch moves (every entry under the old one is a miss).
 *
 * @module
 */
import type { LocalTier } from "../../contract.ts";
import type { CacheEvent } from "../../events.ts";
import type { InvalidationConsumer } from "./invalidations.ts";

/** The consumer of invalidations that keeps `local` coherent; `epochKey` is the namespace's epoch key. */
export function nearTierCoherence(
  local: LocalTier,
  epochKey: string,
  emit: (event: CacheEvent) => void,
): InvalidationConsumer {
  return {
    invalidate(keys) {
      let dropped = 0;
      let all = false;
      for (const key of keys) {
        if (key === epochKey) all = true;
        else if (local.delete(key)) dropped++;
      }
      if (all) {
        dropped += local.size;
        local.clear();
      }
      if (dropped > 0) {
        emit({ type: "near-invalidation", key: keys.length === 1 ? keys[0] : undefined, count: dropped });
      }
    },
    reset() {
      dropNearTier(local, emit);
    },
  };
}

/** Drop every near entry, telling how many (`clear()` drops this process' tier at once). */
export function dropNearTier(local: LocalTier, emit: (event: CacheEvent) => void): void {
  const dropped = local.size;
  local.clear();
  if (dropped > 0) emit({ type: "near-invalidation", key: undefined, count: dropped });
}
