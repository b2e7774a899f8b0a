import { suite } from "uvu";
import * as assert from "uvu/assert";
import { settings } from "../../../lab/chaos/config.ts";
import { Collector } from "../../../lab/chaos/metrics.ts";
import type { Window } from "../../../lab/chaos/protocol.ts";

const Metrics = suite("Collector");

function win(i: number, gets: number, errors = 0, extra: Partial<Window> = {}): Window {
  return {
    t: "win",
    i,
    gets,
    errors: errors > 0 ? { TimeoutError: errors } : {},
    messages: errors > 0 ? { "TimeoutError: x": errors } : {},
    latencies: Array.from({ length: gets }, (_, k) => k + 1),
    backwards: 0,
    wrong: 0,
    ...extra,
  };
}

Metrics("Collector measures recovery per worker and reports the slowest", () => {
  const c = new Collector(2);
  // The fault ends at window 3; worker 0 is clean again at 4, worker 1 at 6.
  for (let i = 0; i < 8; i++) {
    c.add(0, win(i, 100, i >= 2 && i < 4 ? 50 : 0));
    c.add(1, win(i, 100, i >= 2 && i < 6 ? 50 : 0));
  }
  const s = c.summarise(0, 8, 3, 0);
  assert.is(s.recoverMs, 3 * settings.windowMs);
  assert.is(s.gets, 1600);
  assert.equal(s.errors, { TimeoutError: 300 });
  assert.is(s.max, 100);
});

Metrics("Collector says a worker never recovered when it settles nothing or keeps failing", () => {
  const silent = new Collector(2);
  for (let i = 0; i < 8; i++) silent.add(0, win(i, 100));
  for (let i = 0; i < 3; i++) silent.add(1, win(i, 100)); // then nothing settles
  assert.is(silent.summarise(0, 8, 3, 0).recoverMs, undefined);
  const failing = new Collector(1);
  for (let i = 0; i < 8; i++) failing.add(0, win(i, 100, i >= 2 ? 5 : 0));
  assert.is(failing.summarise(0, 8, 3, 0).recoverMs, undefined);
  // ... unless the baseline itself failed that often.
  assert.is(failing.summarise(0, 8, 3, 0.03).recoverMs, 0);
});

Metrics("Collector counts hangs, values going backwards and the counters' rise over a phase", () => {
  const c = new Collector(1);
  c.add(0, win(0, 10, 0, { late: 1, shed: 2, rss: 100 }));
  c.add(0, win(4, 10, 0, { backwards: 2, lost: 3, wrong: 1, late: 4, shed: 2, rss: 300 }));
  c.add(0, { t: "hang", i: 4 });
  c.add(0, { t: "hang", i: 9 });
  c.add(0, { t: "hang", i: 9, what: "cache.close()" });
  const s = c.summarise(1, 8, 1, 0);
  assert.equal([s.backwards, s.lost, s.wrong, s.late, s.shed, s.hangs], [2, 3, 1, 3, 0, 1]);
  assert.equal([s.rssBefore, s.rssAfter], [100, 300]);
  assert.is(c.hangs, 2);
  assert.equal(c.closeHangs, ["worker 0: cache.close()"]);
});

Metrics.run();
