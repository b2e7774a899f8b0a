/**
 * The strategies the bench composes, by name so the tables can print what
 * ran: the full pipeline (every strategy but near(), with settings under
 * which nothing expires or is shed during a run), coalesce() and lease()
 * alone, and the near tier. Drivers and experiments build their caches from
 * these, so every figure measures the same composition.
 *
 * @module
 */
import { coalesce, jitter, lease, limit, near, type Strategy, swr, xfetch } from "../mod.ts";

/** A strategy factory's name and the options it is called with (`undefined`: none). */
export type Layer = readonly [
  name: string,
  options: Record<string, unknown> | undefined,
];

const FACTORIES = {
  coalesce,
  jitter,
  lease,
  limit,
  near,
  swr,
  xfetch,
} as unknown as Record<
  string,
  (options?: Record<string, unknown>) => Strategy
>;

/** The full pipeline's layers, outermost first (the order the README shows). */
export const FULL: readonly Layer[] = [
  ["swr", { staleMs: 60_000 }],
  ["xfetch", undefined],
  ["coalesce", undefined],
  ["lease", undefined],
  ["jitter", { spreadMs: 1_000 }],
  ["limit", { concurrency: 64 }],
];
/** coalesce() and lease() alone: the README's first cache. */
export const CL: readonly Layer[] = [["coalesce", undefined], [
  "lease",
  undefined,
]];
/** The near tier the near rows put in front. */
export const NEAR: Layer = ["near", { maxEntries: 10_000 }];

/** `name(options)` for each layer, as printed. */
export function describeLayers(layers: readonly Layer[]): string {
  return layers.map(([n, o]) =>
    `${n}(${o === undefined ? "" : JSON.stringify(o).replace(/"(\w+)":/g, "$1: ").replace(/,/g, ", ")})`
  ).join(", ");
}

/** The strategies of `layers`, each from a fresh call of its factory. */
export function strategiesOf(layers: readonly Layer[]): Strategy[] {
  return layers.map(([name, options]) => {
    const factory = FACTORIES[name];
    if (factory === undefined) throw new Error(`no strategy named ${name}()`);
    return options === undefined ? factory() : factory(options);
  });
}
