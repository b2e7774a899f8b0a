/**
 * Judge and serve: the one place a read entry meets the read strategies'
 * verdict and, when servable, is counted as served and supersedes the loads
 * running for its key. `get` (near hit and remote read), `getMany` use it;
 * `peek` and `warm` use the same verdict without serving.
 *
 * @module
 */
import type { Entry, Verdict } from "../types.ts";
import type { Core } from "./core.ts";

const MISS: Verdict = Object.freeze({ kind: "miss" });

/**
 * The read strategies' verdict on `entry`; a servable one (hit, early
 * refresh, stale) is counted as served (`near`: from the near tier). A miss
 * (with its stale-if-error fallback, if any) is the caller's to count if it
 * loads.
 */
export function judge(core: Core, key: string, entry: Entry | undefined, near: boolean): Verdict {
  const verdict = core.verdict(entry);
  if (verdict.kind === "miss") return verdict;
  if (entry === undefined) return MISS;
  core.rec.served(key, verdict.kind === "stale", near);
  core.supersede(key);
  return verdict;
}
