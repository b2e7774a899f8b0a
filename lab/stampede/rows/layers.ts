/**
 * The strategy sets every scenario compares: no protection first, then the
 * layers added one at a time, so each row differs from the one above it by
 * exactly one strategy and the last row is the full pipeline.
 *
 * Whatever set a row holds, its strategies are composed in the order the
 * pipeline documents (read strategies, then coalesce outside lease outside
 * limit, then jitter), so "+ limit" counts origin loads only, not lease waiters.
 *
 * @module
 */
import { coalesce, jitter, lease, limit, swr, xfetch } from "../../../mod.ts";
import type { Strategy } from "../../../strategies/strategy.ts";

/** The layers, in the order rows add them. */
export const LAYERS = ["coalesce", "lease", "jitter", "xfetch", "swr", "limit"] as const;
export type Layer = (typeof LAYERS)[number];

/** Pipeline order (outermost first). */
const ORDER: readonly Layer[] = ["swr", "xfetch", "coalesce", "lease", "limit", "jitter"];

/** The settings of each layer in one scenario (plain data: it crosses to worker processes as JSON). */
export interface LayerSettings {
  leaseMs: number;
  waitMs: number;
  jitterSpreadMs: number;
  beta: number;
  staleMs: number;
  ifErrorMs: number;
  concurrency: number;
  queueMs: number;
}

/** Defaults derived from the TTL; scenarios override what their story needs. */
export function layerSettings(ttlMs: number, overrides: Partial<LayerSettings> = {}): LayerSettings {
  return {
    leaseMs: 1500,
    waitMs: 2000,
    jitterSpreadMs: Math.floor(ttlMs / 4),
    beta: 1,
    staleMs: Math.floor(ttlMs / 2),
    ifErrorMs: 0,
    concurrency: 8,
    queueMs: 100,
    ...overrides,
  };
}

/** How many rows: none plus one per layer. */
export const ROWS = LAYERS.length + 1;

/** The layers row `row` holds (row 0: none). */
export function layersOf(row: number): Layer[] {
  return LAYERS.slice(0, row);
}

/** The row's label: `none`, `coalesce`, `+ lease` ... `+ limit (full)`. */
export function rowLabel(row: number): string {
  if (row === 0) return "none";
  if (row === 1) return LAYERS[0];
  return `+ ${LAYERS[row - 1]}${row === LAYERS.length ? " (full)" : ""}`;
}

/**
 * Fresh strategy objects for one cache of row `row` (a strategy object joins
 * one cache only), leaving out `without` (warm-up caches skip `limit`, which
 * would shed a deliberate burst of fills).
 */
export function strategiesFor(row: number, s: LayerSettings, without: readonly Layer[] = []): Strategy[] {
  const held = new Set(layersOf(row).filter((l) => !without.includes(l)));
  const make: Record<Layer, () => Strategy> = {
    coalesce: () => coalesce(),
    lease: () => lease({ leaseMs: s.leaseMs, waitMs: s.waitMs }),
    jitter: () => jitter({ spreadMs: s.jitterSpreadMs }),
    xfetch: () => xfetch({ beta: s.beta }),
    swr: () => swr({ staleMs: s.staleMs, ifErrorMs: s.ifErrorMs }),
    limit: () => limit({ concurrency: s.concurrency, queueMs: s.queueMs }),
  };
  return ORDER.filter((l) => held.has(l)).map((l) => make[l]());
}

/** The row's strategies in pipeline order, for the JSON. */
export function describeRow(row: number): string {
  const held = new Set(layersOf(row));
  return ORDER.filter((l) => held.has(l)).join(", ") || "(no strategy)";
}
