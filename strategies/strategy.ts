/**
 * What a strategy author needs beyond the package root: the contract
 * between `pipeline()` and a strategy (`herdless/strategy` on npm,
 * `@herdless/herdless/strategy` on JSR). A user of the cache needs none of it.
 *
 * @example A read strategy that never serves a negative entry as fresh
 * ```ts
 * import { connect, pipeline } from "@herdless/herdless";
 * import type { Strategy } from "@herdless/herdless/strategy";
 * const noNegativeHits: Strategy = {
 *   name: "noNegativeHits",
 *   read: (verdict, entry) => (entry?.negative && verdict.kind === "hit" ? { kind: "miss" } : verdict),
 * };
 * const redis = await connect(process.env.REDIS_URL);
 * const cache = pipeline({ redis, ttlMs: 1000, negativeTtlMs: 1000 }, noNegativeHits);
 * console.log(await cache.get("strategy-example", () => "v")); // "v"
 * await cache.close();
 * await redis.close();
 * ```
 *
 * @module
 */
export type {
  CacheContext,
  Entry,
  Fill,
  FillRequest,
  FillStage,
  Load,
  LoadRequest,
  LocalTier,
  Outcome,
  PublishGuard,
  ReadResult,
  StoredEntry,
  Strategy,
  Ticket,
  Verdict,
  Wakeups,
  WritePlan,
} from "./contract.ts";
