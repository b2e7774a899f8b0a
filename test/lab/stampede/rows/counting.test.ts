/**
 * The lab's counting client (lab/stampede/rows/counting.ts): every send()
 * counted, and each command's error heard by the watcher while the caller
 * still gets it (the Redis-down stories time a row's first failure by it).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { counted } from "../../../../lab/stampede/rows/counting.ts";
import { rejects } from "../../../support/assert.ts";
import { useRedis } from "../../../support/fixture.ts";

const Counting = suite("counted()");
const db = useRedis(Counting, { prefix: "counted" });

Counting("counts every command and hands each error to the watcher, the caller still rejecting with it", async () => {
  const heard: unknown[] = [];
  const wire = counted(db.redis, (error) => heard.push(error));
  assert.is(await wire.redis.send(["PING"]), "PONG");
  await rejects(() => wire.redis.send(["NO-SUCH-COMMAND"]), Error);
  assert.is(wire.sent(), 2);
  assert.is(heard.length, 1);
  assert.match(String((heard[0] as Error).message), /unknown command/i);
});

Counting("the wrapped client is the client for everything but send(): herdless still sees its connection", () => {
  const wire = counted(db.redis);
  assert.is(wire.redis.connected, db.redis.connected);
  assert.is(typeof wire.redis.onEvent, "function");
});

Counting.run();
