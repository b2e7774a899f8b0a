import { suite } from "uvu";
import * as assert from "uvu/assert";
import { account, quantile, type Read, type Write } from "../../../../lab/stampede/report/stale_reads.ts";

const Account = suite("account()");

const w = (key: number, version: number, ackNs: number): Write => ({ key, version, sentNs: ackNs - 50, ackNs });
const r = (key: number, version: number, startNs: number, endNs = startNs + 10): Read => ({
  key,
  version,
  startNs,
  endNs,
});

Account("account() counts a read stale only when it started after a newer version's acknowledgement", () => {
  const writes = [w(0, 0, 0), w(0, 1, 1000), w(0, 2, 2000)];
  const reads = [
    r(0, 0, 500), // before version 1 was acknowledged: fresh
    r(0, 0, 1000), // starts at the very acknowledgement: not after it, so not stale
    r(0, 0, 1001), // one ns after version 1's acknowledgement: stale, 1 ns late
    r(0, 1, 1500), // the newest acknowledged: fresh
    r(0, 0, 2500), // two versions behind: stale once, 1,500 ns after version 1's ack
    r(0, 2, 2500), // fresh
    r(0, 3, 2600), // a version whose write was not acknowledged yet: newer than anything, fresh
  ];
  const a = account(writes, [reads]);
  assert.is(a.reads, 7);
  assert.is(a.stale, 2);
  assert.equal(a.staleAfterAckNs, [1, 1500]);
  assert.equal(a.staleAtNs, [1001, 2500]);
});

Account("account() keeps keys apart and sums reader processes", () => {
  const writes = [w(0, 0, 0), w(1, 0, 0), w(0, 1, 100), w(1, 1, 900)];
  // Key 1's version 0 is fresh until 900 even though key 0 moved on at 100.
  const p0 = [r(1, 0, 500), r(0, 0, 500)];
  const p1 = [r(1, 0, 950), r(0, 1, 950)];
  const a = account(writes, [p0, p1]);
  assert.is(a.reads, 4);
  assert.is(a.stale, 2);
  assert.equal(a.staleAfterAckNs, [50, 400]);
});

Account("account() counts a value that was never published (version -1) as older than any acknowledged write", () => {
  const a = account([w(0, 0, 100)], [[r(0, -1, 50), r(0, -1, 150)]]);
  assert.is(a.stale, 1);
});

Account("account() measures the lag per write and process to the first read of that version or a newer one", () => {
  const writes = [w(0, 1, 1000), w(0, 2, 2000), w(0, 3, 3000)];
  // Process 0 sees 1 at 1200 (lag 200), skips 2 but sees 3 at 3100 (lag 1,100 for 2, 100 for 3).
  const p0 = [r(0, 0, 1000, 1010), r(0, 1, 1190, 1200), r(0, 1, 2500, 2510), r(0, 3, 3090, 3100)];
  // Process 1 had version 1 before the writer heard its ack (lag 0), and never saw 2 or 3.
  const p1 = [r(0, 1, 900, 990), r(0, 1, 2900, 2990)];
  const a = account(writes, [p0, p1]);
  assert.equal(a.lagNs, [0, 100, 200, 1100]);
  assert.is(a.unseen, 2);
  // The end time decides, not the start: reads listed out of order give the same answer.
  assert.equal(account(writes, [[...p0].reverse(), p1]).lagNs, a.lagNs);
});

Account("account() finds nothing stale without writes after the first, whatever the stamps", () => {
  const reads = Array.from({ length: 100 }, (_, i) => r(i % 3, 0, i * 7));
  const a = account([w(0, 0, 0), w(1, 0, 0), w(2, 0, 0)], [reads]);
  assert.is(a.stale, 0);
  assert.is(a.reads, 100);
});

Account("quantile() is the nearest rank, 0 for no values", () => {
  assert.is(quantile([], 0.5), 0);
  assert.is(quantile([1, 2, 3, 4], 0.5), 2);
  assert.is(quantile([1, 2, 3, 4], 0.99), 4);
});

Account.run();
