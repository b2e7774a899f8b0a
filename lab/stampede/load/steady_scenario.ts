/**
 * A scenario that is one steady-load run ({@linkcode runSteady}) over
 * herdless' layer sets: it only says what load, for the quick lab or the
 * full one. The loads are exported by their scenarios' files so that the
 * recipes' comparison tells the same stories with other rows.
 *
 * @module
 */
import type { LabContext, Mark, Scenario, ScenarioResult } from "../types.ts";
import { runSteady, type SteadySpec } from "./steady.ts";

/** A steady run's settings, less what the scenario names (its id and title). */
export type SteadyLoad = Omit<SteadySpec, "id" | "title">;

/** The scenario `id` running `load(ctx)` through every layer set. */
export function steadyScenario(id: string, title: string, load: (ctx: LabContext) => SteadyLoad): Scenario {
  return {
    id,
    title,
    run: (ctx: LabContext): Promise<ScenarioResult> => runSteady(ctx, { id, title, ...load(ctx) }),
  };
}

/** A mark at every expiry of a key written at the start, TTL `ttlMs`, within `durationMs`. */
export function ttlMarks(ttlMs: number, durationMs: number): Mark[] {
  return Array.from(
    { length: Math.floor((durationMs - 1) / ttlMs) },
    (_, i) => ({ atMs: (i + 1) * ttlMs, label: "TTL" }),
  );
}
