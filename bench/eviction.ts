/**
 * Hit ratios of near()'s SIEVE eviction against LRU on skewed workloads:
 * a Zipf distribution over 100,000 keys (s = 0.8, 1.0, 1.2), plus the same
 * with a one-time scan mixed in (1 request in 4 for a key never seen again),
 * for tier sizes of 1% and 10% of the keys. Deterministic (seeded), no Redis.
 *
 * A micro-benchmark of one internal piece: it imports near()'s tier
 * (`SieveTier` in `strategies/near.ts`), which no entry of the package
 * exports; the entry type it fills comes from `strategies/strategy.ts`.
 *
 *   node --import tsx bench/eviction.ts
 */
import { SieveTier } from "../strategies/near.ts";
import type { StoredEntry } from "../strategies/strategy.ts";
import { seeded, zipf } from "../lab/shared/zipf.ts";

const ENTRY: StoredEntry = {
  value: 1,
  negative: false,
  publishedAt: 0,
  freshMs: 1,
  staleMs: 0,
  ifErrorMs: 0,
  loadMs: 0,
  id: "i",
  epoch: "e",
  tags: [],
  tagVersions: [],
  size: 1,
};

class Lru {
  readonly #map = new Map<string, true>();
  constructor(readonly max: number) {}
  get(key: string): boolean {
    if (!this.#map.delete(key)) return false;
    this.#map.set(key, true);
    return true;
  }
  set(key: string): void {
    this.#map.set(key, true);
    if (this.#map.size > this.max) {
      this.#map.delete(this.#map.keys().next().value!);
    }
  }
}

const KEYS = 100_000;
const REQUESTS = 2_000_000;
const rows: string[] = [
  "| workload | tier size | SIEVE hit ratio | LRU hit ratio |",
  "|---|---:|---:|---:|",
];
for (const s of [0.8, 1.0, 1.2]) {
  for (const scan of [false, true]) {
    for (const size of [KEYS / 100, KEYS / 10]) {
      const sieve = new SieveTier(size, Infinity, () => 0);
      const lru = new Lru(size);
      const rand = seeded(42);
      const next = zipf(KEYS, s, rand);
      let sieveHits = 0, lruHits = 0, scanned = 0;
      for (let i = 0; i < REQUESTS; i++) {
        const key = scan && rand() < 0.25 ? `scan${scanned++}` : `k${next()}`;
        if (sieve.get(key) !== undefined) sieveHits++;
        else sieve.set(key, ENTRY, Infinity);
        if (lru.get(key)) lruHits++;
        else lru.set(key);
      }
      const pct = (h: number) => `${(100 * h / REQUESTS).toFixed(1)}%`;
      rows.push(
        `| Zipf s=${s}${scan ? " + 25% one-time scan" : ""} | ${size} | ${pct(sieveHits)} | ${pct(lruHits)} |`,
      );
    }
  }
}
console.log(
  `${REQUESTS.toLocaleString()} requests over ${KEYS.toLocaleString()} keys, seeded\n`,
);
console.log(rows.join("\n"));
