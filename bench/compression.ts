/**
 * What `compressed()` costs and saves, to pick its algorithm: for a 1 KB,
 * 10 KB and 100 KB JSON value, each candidate of node:zlib's synchronous
 * functions (deflate-raw, gzip, brotli at a few qualities): the stored size
 * against the plain encoding, the encode cost (stringify + compress, paid
 * once per load) and the hit cost (decompress + parse, paid on every hit
 * that reads Redis; a near hit keeps the decoded value and pays neither).
 * Alternating rounds, median of each. Then a second table through a
 * disposable redis-server (ours, on a free port): sequential `cache.get`
 * hits of each value with the json codec and with `compressed()`, where the
 * smaller reply crosses the socket and Redis keeps the smaller value.
 *
 *   node --import tsx bench/compression.ts     (also: bun bench/compression.ts)
 */
import { compressed, connect, pipeline } from "../mod.ts";
import { startRedis } from "../test/support/redis_server.ts";
import { median } from "./report.ts";
import { nsPerOp } from "./timing.ts";
import {
  brotliCompressSync,
  brotliDecompressSync,
  constants,
  deflateRawSync,
  gunzipSync,
  gzipSync,
  inflateRawSync,
} from "node:zlib";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// Records like an API's: repeated field names, ids, short strings, numbers.
function record(i: number) {
  return {
    id: 100_000 + i,
    sku: `SKU-${(i * 7919) % 100_000}`,
    name: `Product ${i} ${["red", "blue", "green", "black"][i % 4]}`,
    price: Math.round(((i * 37) % 1000) * 1.19 * 100) / 100,
    stock: (i * 13) % 250,
    active: i % 3 !== 0,
    tags: ["sale", "new", "eco", "bulk"].slice(0, i % 4 + 1),
    updatedAt: new Date(1_780_000_000_000 + i * 60_000).toISOString(),
  };
}

function jsonOf(bytes: number): unknown {
  const out = [];
  for (let i = 0; JSON.stringify(out).length < bytes; i++) out.push(record(i));
  return out;
}

interface Candidate {
  name: string;
  compress(b: Uint8Array): Uint8Array;
  decompress(b: Uint8Array): Uint8Array;
}

const brotli = (quality: number): Candidate => ({
  name: `brotli q${quality}`,
  compress: (b) =>
    brotliCompressSync(b, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: quality,
        [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
        [constants.BROTLI_PARAM_SIZE_HINT]: b.length,
      },
    }),
  decompress: (b) => brotliDecompressSync(b),
});

const candidates: Candidate[] = [
  {
    name: "deflate-raw l1",
    compress: (b) => deflateRawSync(b, { level: 1 }),
    decompress: (b) => inflateRawSync(b),
  },
  {
    name: "deflate-raw l6",
    compress: (b) => deflateRawSync(b),
    decompress: (b) => inflateRawSync(b),
  },
  {
    name: "gzip l6",
    compress: (b) => gzipSync(b),
    decompress: (b) => gunzipSync(b),
  },
  brotli(1),
  brotli(4),
  brotli(6),
];

const fmt = (
  ns: number,
) => (ns >= 1e6 ? `${(ns / 1e6).toFixed(2)} ms` : `${(ns / 1e3).toFixed(1)} µs`);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const MS = Number(process.env.MS ?? 100);

console.log(
  "| value | algorithm | stored size | ratio | encode (stringify + compress) | hit (decompress + parse) |",
);
console.log("| --- | --- | ---: | ---: | ---: | ---: |");
for (const size of [1024, 10 * 1024, 100 * 1024]) {
  const value = jsonOf(size);
  const text = JSON.stringify(value);
  const plain = encoder.encode(text);
  const label = `${Math.round(plain.length / 1024)} KB JSON`;
  const base = { enc: [] as number[], hit: [] as number[] };
  const rows = candidates.map((c) => ({
    c,
    packed: c.compress(plain),
    enc: [] as number[],
    hit: [] as number[],
  }));
  for (let r = 0; r < ROUNDS; r++) {
    base.enc.push(nsPerOp(() => encoder.encode(JSON.stringify(value)), MS, 8));
    base.hit.push(nsPerOp(() => JSON.parse(decoder.decode(plain)), MS, 8));
    for (const row of rows) {
      row.enc.push(
        nsPerOp(
          () => row.c.compress(encoder.encode(JSON.stringify(value))),
          MS,
          8,
        ),
      );
      row.hit.push(
        nsPerOp(
          () => JSON.parse(decoder.decode(row.c.decompress(row.packed))),
          MS,
          8,
        ),
      );
    }
  }
  console.log(
    `| ${label} | none | ${plain.length} | 1.00 | ${fmt(median(base.enc))} | ${fmt(median(base.hit))} |`,
  );
  for (const row of rows) {
    const ratio = (row.packed.length / plain.length).toFixed(2);
    console.log(
      `| ${label} | ${row.c.name} | ${row.packed.length} | ${ratio} | ${fmt(median(row.enc))} | ${
        fmt(median(row.hit))
      } |`,
    );
  }
}

// Through Redis: one cache per codec, the value stored once, then sequential hits.
const server = await startRedis();
const redis = await connect({ url: server.url, resp: 3 });
const caches: [string, ReturnType<typeof pipeline>][] = [
  ["json", pipeline({ redis, ttlMs: 600_000, namespace: "bench-plain" })],
  [
    "compressed()",
    pipeline({
      redis,
      ttlMs: 600_000,
      namespace: "bench-deflate",
      codec: compressed(),
    }),
  ],
];
console.log(
  "\n| value | codec | stored bytes | Redis hit (sequential, one connection) |",
);
console.log("| --- | --- | ---: | ---: |");
for (const size of [1024, 10 * 1024, 100 * 1024]) {
  const value = jsonOf(size);
  const label = `${Math.round(JSON.stringify(value).length / 1024)} KB JSON`;
  const times = caches.map(() => [] as number[]);
  for (const [, cache] of caches) await cache.get(label, () => value);
  for (let r = 0; r < ROUNDS; r++) {
    for (const [i, [, cache]] of caches.entries()) {
      let n = 0;
      const start = performance.now();
      while (performance.now() - start < MS) {
        await cache.get(label, () => value);
        n++;
      }
      times[i]!.push(((performance.now() - start) * 1e6) / n);
    }
  }
  for (const [i, [name, cache]] of caches.entries()) {
    const bytes = Number(await redis.send(["STRLEN", cache.keys(label).data]));
    console.log(
      `| ${label} | ${name} | ${bytes} | ${fmt(median(times[i]!))} |`,
    );
  }
}
for (const [, cache] of caches) await cache.close();
await redis.close();
await server.stop();
