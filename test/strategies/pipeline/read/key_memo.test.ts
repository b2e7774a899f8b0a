import { suite } from "uvu";
import * as assert from "uvu/assert";
import fc from "fast-check";
import { KeyMemo, MAX_REMEMBERED_CHARS } from "../../../../strategies/pipeline/read/key_memo.ts";
import { keysFor } from "../../../../strategies/pipeline/read/keys.ts";
import type { Identity } from "../../../../strategies/types.ts";
import { seed } from "../../../support/random.ts";

const Memo = suite("KeyMemo");

// Parts that sit close to one another: lone surrogates and what UTF-8 turns
// them into, -0 and 0, numbers and their decimal strings, strings that look
// like the memo's own encoding.
const tricky: (string | number)[] = [
  "a",
  "1",
  1,
  "0",
  0,
  -0,
  "-0",
  1.5,
  "1.5",
  1e21,
  "1e+21",
  "\ud800",
  "\udc00",
  "\ufffd",
  "x\ud800",
  "x\ufffd",
  "😀".slice(0, 1),
  "🦀".slice(0, 1),
  "1:a",
  "n1;",
  "",
  ":",
];
const part = fc.oneof(
  fc.constantFrom(...tricky),
  fc.string({ unit: "binary", maxLength: 4 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);
const identity: fc.Arbitrary<Identity> = fc.oneof(
  fc.constantFrom(...tricky.filter((p): p is string => typeof p === "string" && p.length > 0)),
  fc.string({ unit: "binary", minLength: 1, maxLength: 6 }),
  fc.array(part, { minLength: 1, maxLength: 3 }),
);

// One memo for the whole property: two identities share a slot when it hands out one object for both.
const shared = new KeyMemo("ns", 1_000_000);
const sharesSlot = (a: Identity, b: Identity) => shared.keys(a) === shared.keys(b);
const same = (a: Identity, b: Identity) => {
  const x = keysFor("ns", a);
  const y = keysFor("ns", b);
  return x.data === y.data && x.lease === y.lease;
};

Memo("two identities share a memo slot exactly when keysFor gives them the same keys", () => {
  fc.assert(
    fc.property(identity, identity, (a, b) => {
      assert.is(sharesSlot(a, b), same(a, b), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    }),
    { numRuns: 3000, seed },
  );
  // The cases the issue names, explicitly.
  const pairs: [Identity, Identity, boolean][] = [
    [["a", 1], ["a", "1"], false],
    ["a", ["a"], false],
    [["a"], ["a", 1], false],
    [["x", -0], ["x", 0], true],
    [["\ud800"], ["\ufffd"], false],
    [["\ud800"], ["\udc00"], false],
    ["\ud800", "\ufffd", false],
    [["1:a"], ["1", "a"], false],
    [["ab"], ["a", "b"], false],
    [["a", "1:b"], ["a1", "b"], false],
    [[1e21], ["1e+21"], false],
  ];
  for (const [a, b, equal] of pairs) {
    assert.is(same(a, b), equal, `keysFor: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    assert.is(sharesSlot(a, b), equal, `memo: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  }
});

Memo("the memo returns keysFor's keys, once derived, for every identity", () => {
  fc.assert(
    fc.property(fc.array(identity, { minLength: 1, maxLength: 20 }), (ids) => {
      const memo = new KeyMemo("ns", 8);
      for (const id of [...ids, ...ids]) {
        const { data, lease } = memo.keys(id);
        assert.equal({ data, lease }, keysFor("ns", id));
      }
    }),
    { numRuns: 500, seed },
  );
});

Memo("a remembered identity is not derived again; the memo never holds more than its size", () => {
  const memo = new KeyMemo("ns", 100);
  const first = memo.keys(["product", 42]);
  // The same object: remembered, not derived again (keysFor builds a new one each time).
  assert.is(memo.keys(["product", 42]), first);
  assert.is(memo.keys(["product", -0]), memo.keys(["product", 0]));
  assert.is.not(memo.keys(["product", "42"]), first);
  for (let i = 0; i < 1000; i++) memo.keys(["other", i]);
  assert.ok(memo.size <= 100, `holds ${memo.size}`);
});

Memo("when full it evicts one entry at a time and keeps what is used (second chance), not everything", () => {
  const memo = new KeyMemo("ns", 100);
  const hot = memo.keys("hot");
  // 10 passes over 150 cold identities (1.5x the memo), the hot one read between each.
  for (let pass = 0; pass < 10; pass++) {
    for (let i = 0; i < 150; i++) {
      memo.keys(`cold:${pass}:${i}`);
      assert.is(memo.keys("hot"), hot, `the hot identity was derived again at pass ${pass}, cold ${i}`);
    }
  }
  // A memo that starts over when full drops to a handful of entries; this one stays full.
  assert.is(memo.size, 100);
});

Memo("an invalid tuple is refused as keysFor refuses it, even when its text would match", () => {
  const memo = new KeyMemo("ns", 10);
  memo.keys(["a"]);
  // A String object, an object with toJSON, NaN: never served a remembered valid identity's keys.
  for (const bad of [[new String("a")], [{ toJSON: () => "a" }], [Number.NaN], [], [null]]) {
    assert.throws(() => memo.keys(bad as unknown as Identity), (e: unknown) => e instanceof TypeError);
  }
  assert.throws(() => memo.keys(""), (e: unknown) => e instanceof TypeError);
});

Memo("bounded by characters: identities over 1 KiB are never kept, and a full budget evicts", () => {
  // A megabyte identity (string or tuple) is derived for its call and kept nowhere.
  const memo = new KeyMemo("ns", 100, 20_000);
  const huge = "x".repeat(1 << 20);
  for (const id of [huge, ["t", huge], ["y".repeat(MAX_REMEMBERED_CHARS + 1)]] as Identity[]) {
    const keys = memo.keys(id);
    assert.equal({ data: keys.data, lease: keys.lease }, keysFor("ns", id));
    assert.is.not(memo.keys(id), keys, "an identity over the limit was remembered");
  }
  assert.is(memo.size, 0);
  assert.is(memo.chars, 0);
  // At the limit it is kept.
  const edge = "z".repeat(MAX_REMEMBERED_CHARS);
  assert.is(memo.keys(edge), memo.keys(edge));
  // 1 KiB identities against a 20,000-character budget: a few are kept, never more than the budget holds.
  for (let i = 0; i < 200; i++) memo.keys(`${i}:${"w".repeat(1000)}`);
  assert.ok(memo.chars <= 20_000, `holds ${memo.chars} characters`);
  assert.ok(memo.size >= 10 && memo.size < 20, `holds ${memo.size} identities`);
});

Memo("an evicted tuple leaves no trie nodes behind", () => {
  const memo = new KeyMemo("ns", 10);
  for (let i = 0; i < 10_000; i++) memo.keys(["user", i, "profile", `v${i}`]);
  assert.is(memo.size, 10);
  assert.is(memo.trieNodes, 1 + 10 * 3, "the trie holds more than the ten tuples remembered");
  // Re-reading the last ten finds them remembered; the rest were pruned with their nodes.
  for (let i = 9_990; i < 10_000; i++) {
    assert.is(memo.keys(["user", i, "profile", `v${i}`]), memo.keys(["user", i, "profile", `v${i}`]));
  }
});

Memo.run();
