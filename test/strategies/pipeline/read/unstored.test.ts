/**
 * The order rule of values served but not stored (`unstored.ts`), on
 * entries built by hand: which of a kept value and a stored entry a read
 * serves, by when each load began in server time.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Unstored } from "../../../../strategies/pipeline/read/unstored.ts";
import type { StoredEntry } from "../../../../strategies/contract.ts";

const test = suite("unstored values");

/** An entry whose load began at `began` and was published `loadMs` later (server ms). */
function entry(value: string, began: number, loadMs: number): StoredEntry {
  return {
    value,
    negative: false,
    publishedAt: began + loadMs,
    freshMs: 60_000,
    staleMs: 0,
    ifErrorMs: 0,
    loadMs,
    id: value,
    epoch: "e",
    tags: [],
    tagVersions: [],
    size: 1,
  };
}

const current = () => true;

test("an entry stored elsewhere whose load began within 20 ms of the kept one's is simultaneous: the value served here stays", () => {
  const u = new Unstored();
  // Kept: began at 1000, loaded in 10 ms, served here at 1010.
  u.keep("k", entry("kept", 1000, 10), 60_000, 0, 1000);
  // Published before the kept value's load ended, begun 15 ms after it began (two processes' clock estimates).
  assert.is(u.over("k", entry("near-start", 1015, 2), 1, current)?.value, "kept");
  // Published after it ended, begun 15 ms after it ended.
  assert.is(u.over("k", entry("near-end", 1025, 10), 1, current)?.value, "kept");
});

test("an entry whose load began clearly after the kept one's retires it", () => {
  const u = new Unstored();
  u.keep("k", entry("kept", 1000, 10), 60_000, 0, 1000);
  assert.is(u.over("k", entry("later", 1031, 10), 1, current)?.value, "later");
  assert.is(u.size, 0, "retired");
});

test("an entry published before the kept value's load ended, begun clearly after it began, is newer", () => {
  const u = new Unstored();
  u.keep("k", entry("kept", 1000, 100), 60_000, 0, 1000);
  assert.is(u.over("k", entry("faster", 1030, 5), 1, current)?.value, "faster");
});

test("two values kept here are ordered by the local clock: the later start wins outright, the earlier never displaces it", () => {
  const u = new Unstored();
  u.keep("k", entry("first", 1000, 10), 60_000, 0, 1000);
  u.keep("k", entry("second", 1005, 10), 60_000, 1, 1005);
  assert.is(u.over("k", entry("old", 900, 10), 2, current)?.value, "second");
  u.keep("k", entry("earlier", 1001, 30), 60_000, 3, 1001);
  assert.is(u.over("k", entry("old", 900, 10), 4, current)?.value, "second");
  // The estimate of the server's clock moved between two loads: their local starts still order them.
  u.keep("k", entry("third", 990, 10), 60_000, 5, 1010);
  assert.is(u.over("k", entry("old", 900, 10), 6, current)?.value, "third");
});

test("a kept value whose epoch moved on is not served, nor the older entry found: a miss, until a newer entry retires it", () => {
  const u = new Unstored();
  u.keep("k", entry("kept", 1000, 10), 60_000, 0, 1000);
  // Its epoch was a token made up while writes were refused; the real one is known now, and the older entry carries it.
  const notCurrent = () => false;
  assert.is(u.over("k", entry("older", 990, 30), 1, notCurrent), undefined);
  assert.is(u.over("k", entry("older", 990, 30), 2, notCurrent), undefined, "still a miss: the kept value stays");
  assert.is(u.size, 1);
  assert.is(u.over("k", entry("reloaded", 1100, 10), 3, notCurrent)?.value, "reloaded");
  assert.is(u.size, 0);
});

test("a later load stored by this process retires the kept value; an older one that published only now does not", () => {
  const u = new Unstored();
  u.keep("k", entry("kept", 1000, 10), 60_000, 0, 1000);
  u.stored("k", 999);
  assert.is(u.size, 1, "began before the kept value's load");
  u.stored("k", 1001);
  assert.is(u.size, 0);
});

test("a change heard from another writer: the kept value no longer stands in for a missing entry, but still outranks an older one found", () => {
  const u = new Unstored();
  u.keep("k", entry("kept", 1000, 10), 60_000, 0, 1000);
  assert.is(u.kept("k", 1, true)?.value, "kept", "stands in for a missing entry while every change was heard");
  // Another process' write of the key: its invalidate() (the key emptied on purpose), or an older load publishing late.
  u.invalidate(["k"]);
  assert.is(u.kept("k", 2, true), undefined, "an emptied key stays empty");
  assert.is(u.over("k", entry("older", 990, 30), 3, current)?.value, "kept", "the late older publication");
  // With Redis unreachable nothing is heard anyway: what this process holds is served.
  assert.is(u.kept("k", 4, false)?.value, "kept");
  // A reset (a reconnect: changes may have gone unheard) has the same effect on a value kept before it.
  u.keep("j", entry("kept j", 1000, 10), 60_000, 5, 1000);
  u.reset();
  assert.is(u.kept("j", 6, true), undefined);
  assert.is(u.kept("j", 7, false)?.value, "kept j");
});

test.run();
