/** A steady, bounded load for fault tests: a few loops, each one call at a time. */

export interface LoadResult {
  ok: number;
  errors: unknown[];
}

/**
 * Run `workers` loops calling `op` until `stop()` returns true. Every call's
 * outcome is recorded; the returned promise never rejects.
 */
export async function load(
  workers: number,
  op: (worker: number, i: number) => Promise<unknown>,
  stop: () => boolean,
): Promise<LoadResult> {
  const result: LoadResult = { ok: 0, errors: [] };
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; !stop(); i++) {
        try {
          await op(w, i);
          result.ok++;
        } catch (error) {
          result.errors.push(error);
          // An immediate rejection must not starve the timers that end the load.
          await new Promise((r) => setTimeout(r, 1));
        }
      }
    }),
  );
  return result;
}

/** The distinct `name: message` of some errors, for assertion messages. */
export function summary(errors: readonly unknown[]): string {
  return [...new Set(errors.map((e) => `${(e as Error)?.name}: ${(e as Error)?.message}`))].slice(0, 5).join(" | ");
}
