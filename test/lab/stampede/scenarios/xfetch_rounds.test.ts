/**
 * The XFetch comparison's accounting (lab/stampede/scenarios/xfetch.ts): origin calls
 * that start before a round's first call has published belong to that
 * round; a round's gap is how long before the entry's expiry it started
 * (the previous round's first publication plus the TTL; the warm-up's
 * publication is the clock's start), negative for a miss. Synthetic
 * stamps, no Redis.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { rounds } from "../../../../lab/stampede/scenarios/xfetch.ts";

const Rounds = suite("xfetch rounds()");

Rounds("calls that start before the round's first publication join it; the gap runs to that round's expiry", () => {
  const ttl = 1000;
  const r = rounds(
    [
      [700, 800], // round 1: 300 ms before the warm-up's expiry at 1000
      [750, 860], // starts before 800: the same round
      [790, 795], // ends first: round 1 published at 795
      [1600, 1700], // round 2: expiry at 795 + 1000 = 1795, gap 195
      [2800, 2900], // round 3: after 1700 + 1000 = 2700, a miss (gap -100)
      [2810, 2905],
    ],
    ttl,
  );
  assert.is(r.rounds, 3);
  assert.is(r.calls, 6);
  assert.equal(r.each, [{ gap: 300, calls: 3 }, { gap: 195, calls: 1 }, { gap: -100, calls: 2 }]);
});

Rounds("order of the input does not matter", () => {
  const loads: [number, number][] = [[1600, 1700], [700, 800], [750, 860]];
  assert.equal(rounds(loads, 1000).each, [{ gap: 300, calls: 2 }, { gap: 200, calls: 1 }]);
});

Rounds.run();
