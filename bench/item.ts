/**
 * The value every cache-level figure reads: a small JSON record, the same
 * size for every key, so the caches compared (and the experiments beside
 * them) decode exactly the same bytes.
 *
 * @module
 */

/** Encoded size of every value, in bytes. */
export const CACHE_VALUE_BYTES = 120;

/** A catalogue item, as a cache of product pages would hold. */
export interface Item {
  id: number;
  sku: string;
  name: string;
  price: number;
  stock: number;
  tags: string[];
  pad: string;
}

/** Value `i`: a small JSON object whose encoding is exactly `bytes` bytes. */
export function cacheValue(i: number, bytes = CACHE_VALUE_BYTES): Item {
  const n = String(i).padStart(6, "0");
  const v: Item = {
    id: i,
    sku: `SKU-${n}`,
    name: `item ${n}`,
    price: 1000 + (i % 9000),
    stock: i % 97,
    tags: ["bench", "hot"],
    pad: "",
  };
  const missing = bytes - JSON.stringify(v).length;
  if (missing < 0) {
    throw new RangeError(
      `a value cannot be smaller than ${bytes - missing} bytes`,
    );
  }
  v.pad = "x".repeat(missing);
  return v;
}
