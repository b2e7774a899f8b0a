/**
 * What the json codec's round-trip check costs: `JSON.stringify` alone
 * against the codec's `encode` (stringify, then the walk that refuses a
 * Date, a Map, NaN...), on a small record, a list of 100 records and a list
 * of 10,000. No Redis. Alternating rounds, median of each.
 *
 * A micro-benchmark of one internal piece: it imports the codec itself
 * (`strategies/codec/codec.ts`), which no entry of the package exports.
 *
 *   node --import tsx bench/codec.ts
 */
import { resolveCodec } from "../strategies/codec/codec.ts";
import { median } from "./report.ts";
import { nsPerOp } from "./timing.ts";

const json = resolveCodec("json");
const record = (i: number) => ({
  id: i,
  name: `user ${i}`,
  email: `user${i}@example.com`,
  active: i % 2 === 0,
  score: i * 1.5,
  tags: ["a", "b", "c"],
  address: { city: "Paris", zip: "75001", geo: { lat: 48.86, lng: 2.35 } },
  note: null,
});
const values: [string, unknown][] = [
  ["1 record (8 fields, 2 nested objects)", record(1)],
  ["100 records", Array.from({ length: 100 }, (_, i) => record(i))],
  ["10,000 records", Array.from({ length: 10_000 }, (_, i) => record(i))],
];

const fmt = (
  ns: number,
) => (ns >= 1e6 ? `${(ns / 1e6).toFixed(2)} ms` : ns >= 1e3 ? `${(ns / 1e3).toFixed(2)} µs` : `${ns.toFixed(0)} ns`);
console.log(
  "| value | JSON.stringify | json codec encode (with the check) | check's share |",
);
console.log("| --- | ---: | ---: | ---: |");
for (const [name, value] of values) {
  const plain: number[] = [];
  const checked: number[] = [];
  for (let r = 0; r < 7; r++) {
    plain.push(nsPerOp(() => JSON.stringify(value), 200));
    checked.push(nsPerOp(() => json.encode(value), 200));
  }
  const a = median(plain);
  const b = median(checked);
  console.log(
    `| ${name} | ${fmt(a)} | ${fmt(b)} | +${((b / a - 1) * 100).toFixed(0)}% |`,
  );
}
