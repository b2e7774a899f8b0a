/**
 * The simulated origin's counts (lab/stampede/load/origin.ts): calls, the
 * most at once, and the most of one key at once, which the Redis-down
 * stories read as "at most one load per key per process at a time".
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { SimOrigin } from "../../../../lab/stampede/load/origin.ts";

const Origin = suite("SimOrigin");

Origin("peakPerKey counts the calls of one key running at once, apart from the calls of other keys", async () => {
  const origin = new SimOrigin({ baseMs: 1, bucketMs: 100, buckets: 10 });
  origin.start(performance.now());
  // Two of key 1 and one of key 2 at once: 3 running, 2 of one key.
  await Promise.all([origin.call(1), origin.call(1), origin.call(2)]);
  assert.equal([origin.calls, origin.peak, origin.peakPerKey], [3, 3, 2]);
  // Every call ended: a new call of key 1 runs alone.
  const again = new SimOrigin({ baseMs: 1, bucketMs: 100, buckets: 10 });
  again.start(performance.now());
  await again.call(1);
  await again.call(1);
  await Promise.all([again.call(1), again.call(2), again.call(3)]);
  assert.equal([again.calls, again.peak, again.peakPerKey], [5, 3, 1]);
});

Origin("a call given no key counts toward the peak, never toward one key's", async () => {
  const origin = new SimOrigin({ baseMs: 1, bucketMs: 100, buckets: 10 });
  origin.start(performance.now());
  await Promise.all([origin.call(), origin.call(), origin.call(7)]);
  assert.equal([origin.peak, origin.peakPerKey], [3, 1]);
});

Origin.run();
