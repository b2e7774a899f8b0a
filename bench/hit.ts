/**
 * A cache hit through the full pipeline against a raw GET of the same data
 * key with the same client. Both variants fill the cache first through
 * `cache.get` (so the raw GET reads exactly the stored envelope), then
 * measure only hits: the loader is counted and must not run while measuring.
 *
 * It measures the cache as a user calls it: herdless comes from the
 * package's entry (`mod.ts`), composed as `layers.ts` says.
 *
 * @module
 */
import { connect, pipeline } from "../mod.ts";
import { FULL, strategiesOf } from "./layers.ts";
import { type IN_FLIGHT, KEYS, lanes, VALUE } from "./scenarios.ts";

/** Fill this many misses at once: fewer than the full pipeline's limit() admits (64), so none is shed. */
const FILL_AT_ONCE = 32;

export interface HitRun {
  run: (ms: number) => Promise<number>;
  close: () => Promise<void>;
  /** Loader calls so far (must stay at the fill count). */
  loads: () => number;
  /** The layers composed, by name. */
  layers: string[];
}

/** Prepare the hit scenario: `pipeline` hits through the cache, `raw-get` GETs the same data keys. */
export async function prepareHit(
  variant: "pipeline" | "raw-get",
  url: string,
  inFlight: 1 | typeof IN_FLIGHT,
): Promise<HitRun> {
  const redis = await connect({ url });
  const cache = pipeline(
    { redis, ttlMs: 600_000, namespace: "bench" },
    ...strategiesOf(FULL),
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
    layers: FULL.map(([name]) => name),
  };
}
