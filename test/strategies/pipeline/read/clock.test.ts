/**
 * The estimate of a server's clock against a real redis-server, with a fake
 * local clock that the test moves: how far an estimate may be off, and when
 * it is measured again.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Arg, RedisLike, SendOptions } from "../../../../resp/types.ts";
import { ServerClock } from "../../../../strategies/pipeline/read/clock.ts";
import { useRedis } from "../../../support/fixture.ts";
import { until } from "../../../support/wait.ts";

const test = suite("server clock");
const db = useRedis(test, { prefix: "clock" });

/**
 * A clock whose round trips last `rttMs` (each measurement reads the local
 * clock before and after), over a client that counts its commands.
 */
function measured(rttMs: () => number) {
  let local = 1_000;
  let sent = 0;
  let answered = 0;
  const redis: RedisLike = {
    send(command: readonly Arg[], options?: SendOptions) {
      sent++;
      return db.redis.send(command, options).finally(() => {
        local += rttMs();
        answered++;
      });
    },
  };
  const clock = new ServerClock({ redis, now: () => local, commandTimeoutMs: 5000 });
  return {
    clock,
    get sent() {
      return sent;
    },
    get answered() {
      return answered;
    },
    advance(ms: number) {
      local += ms;
    },
  };
}

test("an estimate may be off by half the round trip it was measured over", async () => {
  const c = measured(() => 6);
  assert.is(c.clock.errorMs("k"), undefined, "not measured yet");
  await c.clock.sync("k");
  assert.is(c.clock.errorMs("k"), 3);
});

test("a tight estimate is measured again after 30 s, not before", async () => {
  const c = measured(() => 0);
  await c.clock.sync("k");
  const sent = c.sent;
  c.advance(29_000);
  c.clock.at("k");
  assert.is(c.sent, sent, "no re-measure within 30 s");
  c.advance(1_001);
  c.clock.at("k");
  assert.is(c.sent, sent + 1);
});

test("a loose estimate is measured again a second later, and a tighter one replaces it", async () => {
  let rtt = 40;
  const c = measured(() => rtt);
  await c.clock.sync("k");
  assert.is(c.clock.errorMs("k"), 20);
  const sent = c.sent;
  rtt = 2;
  c.advance(1_001);
  c.clock.at("k");
  assert.is(c.sent, sent + 1, "re-measured after a second");
  await until(() => c.clock.errorMs("k") === 1);
});

test("a loose estimate gives way only to a tighter one", async () => {
  let rtt = 40;
  const c = measured(() => rtt);
  await c.clock.sync("k");
  rtt = 60;
  const sent = c.sent;
  c.advance(1_001);
  c.clock.at("k");
  assert.is(c.sent, sent + 1);
  // The re-measure was answered, and the tighter estimate kept.
  await until(() => c.answered === sent + 1);
  assert.is(c.clock.errorMs("k"), 20);
});

test("a link that stays slow is re-measured less and less often: 1 s, 2 s, 4 s", async () => {
  const c = measured(() => 40);
  await c.clock.sync("k");
  let sent = c.sent;
  for (const waitMs of [1_000, 2_000, 4_000]) {
    c.advance(waitMs - 1);
    c.clock.at("k");
    assert.is(c.sent, sent, `not yet, ${waitMs - 1} ms after the last`);
    c.advance(1);
    c.clock.at("k");
    assert.is(c.sent, ++sent, `${waitMs} ms after the last`);
    await until(() => c.answered === sent);
  }
});

test("caches sharing a server's estimate (a Worker's, one per request) start one re-measure between them", async () => {
  let local = 1_000;
  let sent = 0;
  // Named so that no other cache of this process shares its estimate.
  const redis = {
    serverName: `clock-test-${Math.random()}`,
    send(command: readonly Arg[], options?: SendOptions) {
      sent++;
      return db.redis.send(command, options);
    },
  };
  const caches = [1, 2, 3].map(() =>
    new ServerClock({ redis, now: () => local, commandTimeoutMs: 5000, shared: true })
  );
  await caches[0]!.sync("k");
  assert.ok(caches[2]!.known("k"), "shared");
  const before = sent;
  local += 30_000;
  for (const clock of caches) clock.at("k");
  assert.is(sent, before + 1);
});

test.run();
