/**
 * A cache hit through the full pipeline against a raw GET of the same data
 * key with the same client. Both variants fill the cache first through
 * `cache.get` (so the raw GET reads exactly the stored envelope), then
 * measure only hits: the loader is counted and must not run while measuring.
 *
 * It measures the cache as a user calls it, so it imports the package's
 * entries (`mod.ts`, `resp/mod.ts`) and nothing behind them.
 *
 * @module
 */
import * as herdless from "../mod.ts";
import { connect } from "../resp/mod.ts";
import { type IN_FLIGHT, KEYS, lanes, VALUE } from "./scenarios.ts";

type Factory = (options?: Record<string, unknown>) => unknown;
interface CacheLike {
  get(identity: unknown, loader: () => unknown): Promise<unknown>;
  keys(identity: unknown): { data: string; lease: string };
  close(): Promise<void>;
}
interface CacheModule {
  pipeline: (
    options: Record<string, unknown>,
    ...strategies: unknown[]
  ) => CacheLike;
  [factory: string]: unknown;
}

/**
 * The full pipeline: every layer the lab adds one at a time, in the order
 * the contract documents (first is outermost), with settings that never
 * expire an entry during a run. A factory the module does not export is left
 * out and reported.
 */
const LIMIT = 64;
const FILL_AT_ONCE = 32;
const LAYERS: readonly [string, Record<string, unknown> | undefined][] = [
  ["coalesce", undefined],
  ["limit", { concurrency: LIMIT }],
  ["lease", undefined],
  ["jitter", { spreadMs: 1_000 }],
  ["xfetch", undefined],
  ["swr", { staleMs: 60_000 }],
];

export interface HitRun {
  run: (ms: number) => Promise<number>;
  close: () => Promise<void>;
  /** Loader calls so far (must stay at the fill count). */
  loads: () => number;
  /** The layers actually composed. */
  layers: string[];
}

/** Prepare the hit scenario: `pipeline` hits through the cache, `raw-get` GETs the same data keys. */
export async function prepareHit(
  variant: "pipeline" | "raw-get",
  url: string,
  inFlight: 1 | typeof IN_FLIGHT,
): Promise<HitRun> {
  const mod = herdless as unknown as CacheModule;
  const redis = await connect({ url });
  const strategies: unknown[] = [];
  const layers: string[] = [];
  for (const [name, options] of LAYERS) {
    const factory = mod[name];
    if (typeof factory !== "function") continue;
    strategies.push(
      options === undefined ? (factory as Factory)() : (factory as Factory)(options),
    );
    layers.push(name);
  }
  const cache = mod.pipeline(
    { redis, ttlMs: 600_000, namespace: "bench" },
    ...strategies,
  );
  let loads = 0;
  const loader = () => {
    loads++;
    return VALUE;
  };
  const identities = Array.from(
    { length: KEYS },
    (_, i) => ["hit", i] as const,
  );
  // Fill: one miss per identity, FILL_AT_ONCE at a time (fewer than limit() admits).
  for (let i = 0; i < KEYS; i += FILL_AT_ONCE) {
    await Promise.all(
      identities.slice(i, i + FILL_AT_ONCE).map((id) => cache.get(id, loader)),
    );
  }
  const dataKeys = identities.map((id) => cache.keys(id).data);
  const op = variant === "pipeline"
    ? (i: number) => cache.get(identities[i % KEYS]!, loader)
    : (i: number) => redis.send(["GET", dataKeys[i % KEYS]!]);
  return {
    run: lanes(inFlight, op),
    close: async () => {
      await cache.close();
      await redis.close();
    },
    loads: () => loads,
    layers,
  };
}
