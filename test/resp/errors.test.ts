/** The error classes' fields: TimeoutError names the setting that ran out, its value, and how long it waited. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { isTimeoutError, TimeoutError, timeoutMessage } from "../../resp/errors.ts";

const test = suite("TimeoutError");

test("carries the setting, its value and the measured wait; the message holds no measured duration", () => {
  const cause = new Error("socket gone");
  const e = new TimeoutError(timeoutMessage("Command GET", "timeoutMs", 2000), 2013, {
    setting: "timeoutMs",
    timeoutMs: 2000,
    cause,
  });
  assert.is(e.message, "Command GET timed out: 'timeoutMs' of 2000 ms ran out");
  assert.equal([e.name, e.setting, e.timeoutMs, e.waitedMs], ["TimeoutError", "timeoutMs", 2000, 2013]);
  assert.is(e.cause, cause);
  assert.ok(isTimeoutError(e));
});

test("two timeouts of one setting read the same whatever they measured, so logs group by message", () => {
  const a = new TimeoutError(timeoutMessage("Cannot get k", "waitMs", 1500), 1502, {
    setting: "waitMs",
    timeoutMs: 1500,
  });
  const b = new TimeoutError(timeoutMessage("Cannot get k", "waitMs", 1500), 1731, {
    setting: "waitMs",
    timeoutMs: 1500,
  });
  assert.is(a.message, b.message);
  assert.is.not(a.waitedMs, b.waitedMs);
});

test("the two-argument form still works: setting 'timeoutMs', timeoutMs the wait, no cause", () => {
  const e = new TimeoutError("late", 5);
  assert.equal([e.message, e.setting, e.timeoutMs, e.waitedMs], ["late", "timeoutMs", 5, 5]);
  assert.not.ok("cause" in e);
});

test.run();
