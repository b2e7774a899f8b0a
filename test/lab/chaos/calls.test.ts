import { suite } from "uvu";
import * as assert from "uvu/assert";
import { callsPerPhase } from "../../../lab/chaos/calls.ts";
import { settings } from "../../../lab/chaos/config.ts";
import { LOG_KEY } from "../../../lab/chaos/origin.ts";
import { useRedis } from "../../support/fixture.ts";

const Calls = suite("callsPerPhase()");
const db = useRedis(Calls, { connect: {} });

Calls("callsPerPhase() counts a call sooner than minGapMs after the previous one for its key as excess", async () => {
  const gap = settings.minGapMs;
  const log = [
    `a 1000`,
    `b 1000`,
    `a ${1000 + gap}`, // one TTL window later: fine
    `a ${1000 + gap + 10}`, // right after: excess
    `b ${1000 + gap - 1}`, // in phase 1, but its previous call was in phase 0: excess all the same
    `${settings.bigKey} 5000`,
    `${settings.bigKey} 5001`, // the large values are counted, never judged
  ];
  await db.redis.send(["RPUSH", LOG_KEY, ...log]);
  const phases = await callsPerPhase(db.redis, [
    { start: 0, faultEnd: 1000 },
    { start: 2000, faultEnd: 4000 },
  ]);
  assert.equal([phases[0]!.calls, phases[0]!.excess], [2, 0]);
  assert.equal([phases[1]!.calls, phases[1]!.excess], [5, 2]);
  assert.is(phases[1]!.byKey.get(settings.bigKey), 2);
  // Calls per second while the fault lasted: three of them before 4000 ms, over 2 s.
  assert.is(phases[1]!.faultRate, 1.5);
});

Calls(
  "callsPerPhase() counts only the keys it is told to (the sentinel worker's apart from the workers')",
  async () => {
    await db.redis.send(["DEL", LOG_KEY]);
    await db.redis.send(["RPUSH", LOG_KEY, "k1 1000", "s1 1000", "s1 1010", "k1 1020"]);
    const times = [{ start: 0, faultEnd: 2000 }];
    const sentinel = (key: string) => key.startsWith("s");
    assert.equal((await callsPerPhase(db.redis, times, (key) => !sentinel(key))).map((p) => [p.calls, p.excess]), [[
      2,
      1,
    ]]);
    assert.equal((await callsPerPhase(db.redis, times, sentinel)).map((p) => [p.calls, p.excess]), [[2, 1]]);
  },
);

Calls.run();
