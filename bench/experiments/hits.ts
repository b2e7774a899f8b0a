/**
 * What the hit experiments share: the cache table's 1,000 identities and
 * values with loaders that count their calls, the same values stored raw
 * for the plain-GET variants, and a run of hits in lanes that checks each
 * one came back as the value of its key.
 *
 * @module
 */
import type { RedisClient } from "../../mod.ts";
import { cacheValue, type Item } from "../item.ts";

/** Distinct keys the experiments read. */
export const KEYS = 1_000;

/** The identities (`item:<i>`), their values, and one loader each; `loads()` counts the loader calls. */
export function hitData() {
  const ids = Array.from({ length: KEYS }, (_, i) => `item:${i}`);
  const values = ids.map((_, i) => cacheValue(i));
  let loads = 0;
  const loaders = values.map((v) => (): Item => {
    loads++;
    return v;
  });
  return { ids, values, loaders, loads: () => loads };
}

/** Store each value as JSON under `<prefix><id>` for the raw variants (no envelope), 10 minutes; resolves the keys. */
export async function storeRaw(
  redis: RedisClient,
  prefix: string,
  data: ReturnType<typeof hitData>,
): Promise<string[]> {
  const keys = data.ids.map((id) => `${prefix}${id}`);
  for (let i = 0; i < KEYS; i++) {
    await redis.send([
      "SET",
      keys[i]!,
      JSON.stringify(data.values[i]),
      "PX",
      600_000,
    ]);
  }
  return keys;
}

/** Run hits 0 to `n - 1` through `get`, `inFlight` at a time; throws if a hit returns another key's value. */
export async function runHits(
  get: (i: number) => Promise<unknown>,
  n: number,
  inFlight: number,
): Promise<void> {
  let next = 0;
  async function lane(): Promise<void> {
    while (next < n) {
      const i = next++;
      const got = (await get(i)) as { id: number };
      if (got.id !== i % KEYS) {
        throw new Error(`hit ${i} returned ${JSON.stringify(got)}`);
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(inFlight, n) }, lane));
}
