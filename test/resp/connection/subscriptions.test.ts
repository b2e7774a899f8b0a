import { suite } from "uvu";
import * as assert from "uvu/assert";
import { isMessage, subscriptionCount, Subscriptions } from "../../../resp/connection/subscriptions.ts";

const subs = suite("Subscriptions");

subs("track() counts one confirmation per channel, and one per channel left for an unsubscribe from everything", () => {
  const s = new Subscriptions();
  assert.is(s.track(["GET", "k"]), 1);
  assert.is(s.track(["SUBSCRIBE", "a", "b", "c"]), 3);
  assert.is(s.track(["unsubscribe", "b"]), 1);
  assert.is(s.track(["UNSUBSCRIBE"]), 2, "a and c are left");
  assert.is(s.track(["UNSUBSCRIBE"]), 1, "Redis confirms once when nothing is subscribed");
  assert.is(s.track(["PSUBSCRIBE"]), 1);
});

subs("PUNSUBSCRIBE and SUNSUBSCRIBE unsubscribe (they were once recorded as subscriptions of their own)", () => {
  const s = new Subscriptions();
  s.track(["PSUBSCRIBE", "a*", "b*"]);
  s.track(["SSUBSCRIBE", "{t}1", "{t}2"]);
  assert.is(s.track(["PUNSUBSCRIBE"]), 2, "one confirmation per pattern left");
  assert.is(s.track(["sunsubscribe", "{t}1"]), 1);
  assert.equal(s.restore(), [["SSUBSCRIBE", "{t}2"]]);
});

subs("restore() gives one command per kind, channels as given: bytes stay bytes", () => {
  const s = new Subscriptions();
  const bytes = new Uint8Array([0xff, 0x00, 0x41]);
  s.track(["SUBSCRIBE", "a", bytes, 7]);
  s.track(["PSUBSCRIBE", "news.*"]);
  s.track(["SSUBSCRIBE", "{x}s"]);
  s.track(["UNSUBSCRIBE", "7"]);
  assert.equal(s.restore(), [["SUBSCRIBE", "a", bytes], ["PSUBSCRIBE", "news.*"], ["SSUBSCRIBE", "{x}s"]]);
  s.track(["PUNSUBSCRIBE"]);
  s.track(["SUNSUBSCRIBE", "{x}s"]);
  assert.equal(s.restore(), [["SUBSCRIBE", "a", bytes]]);
});

subs("RESP2 frames: messages and confirmation counts are told from ordinary arrays", () => {
  assert.ok(isMessage(["message", "ch", "hi"]));
  assert.ok(isMessage(["pmessage", "p*", "ch", "hi"]));
  assert.not.ok(isMessage(["subscribe", "ch", 1]));
  assert.not.ok(isMessage("message"));
  assert.is(subscriptionCount(["subscribe", "ch", 2]), 2);
  assert.is(subscriptionCount(["unsubscribe", "ch", 0]), 0);
  assert.is(subscriptionCount(["message", "ch", 3]), -1);
  assert.is(subscriptionCount(["a", "b", 1]), -1);
  assert.is(subscriptionCount("OK"), -1);
});

subs.run();
