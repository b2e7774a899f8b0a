import { suite } from "uvu";
import * as assert from "uvu/assert";
import { zipf } from "../../../lab/shared/zipf.ts";

const Zipf = suite("zipf()");

Zipf("zipf() draws key i with weight 1 / (i + 1)^s, over [0, n)", () => {
  // An even sweep of [0, 1) stands in for the random source: the counts are then exact shares.
  const draws = 100_000;
  let u = 0;
  const next = zipf(4, 1, () => (u++ + 0.5) / draws);
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < draws; i++) counts[next()]!++;
  const h = 1 + 1 / 2 + 1 / 3 + 1 / 4;
  counts.forEach((c, i) => assert.ok(Math.abs(c - draws / (i + 1) / h) <= 1, `key ${i}: ${c}`));
});

Zipf.run();
