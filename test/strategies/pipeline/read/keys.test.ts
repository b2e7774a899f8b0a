import { suite } from "uvu";
import * as assert from "uvu/assert";
import fc from "fast-check";
import { pipeline } from "../../../../strategies/pipeline/pipeline.ts";
import { checkNamespace, keysFor } from "../../../../strategies/pipeline/read/keys.ts";
import type { Identity } from "../../../../strategies/types.ts";
import { rejects } from "../../../support/assert.ts";
import { useRedis } from "../../../support/fixture.ts";
import { seed } from "../../../support/random.ts";

const Keys = suite("keysFor()");

Keys("keysFor() keeps the keys of well-formed identities as they were (stored values stay reachable)", () => {
  // Computed before lone surrogates got their own encoding: a well-formed
  // identity must hash exactly as before, or an upgrade empties every cache.
  const golden: [Identity, string][] = [
    ["a", "1DFdg6ld-ut57MnU9bLWGAToiqqstB2FWXe5kyhkNcQ"],
    [["a"], "400ft39Ju7YfwCGiFd6Bz8ING8CLkC1RY45i3dROUOs"],
    [["a", 1], "gK85UPAJ0oVf8VI7GqXkHUzooS0pPyozB1K8_4TF2Os"],
    [["a", "1"], "pOddqM7xZvaMNE36VFjt3ewGUWNKPq2XzbanpQcfnPo"],
    ["héllo 😀", "5Xa3w28tILy6K8y42qxFLE8aHBO49-xrPqeCRaE0nVY"],
    [["user", 42, "ünï", -1.5], "yMJ-9Fb8QKUHIyH04OzTj1EEzM7V5nRGdEjEYm7uwnY"],
  ];
  for (const [identity, digest] of golden) {
    assert.equal(keysFor("ns", identity), { data: `ns:{${digest}}:data`, lease: `ns:{${digest}}:lease` });
  }
});

// Each pair differs only in code units that UTF-8 cannot carry (a lone
// surrogate becomes U+FFFD), so a hash of the UTF-8 bytes saw them as one.
const surrogatePairs: [Identity, Identity][] = [
  ["x\ud800", "x\ufffd"],
  ["\ud800", "\udc00"],
  ["😀".slice(0, 1), "🦀".slice(0, 1)], // the first halves of two different emoji
  ["😀".slice(1), "🦀".slice(1)], // and their second halves
  ["\udc00\ud800", "\ufffd\ufffd"], // a pair in the wrong order is two lone surrogates
  [["x\ud800"], ["x\ufffd"]],
  [["\ud800", 1], ["\udc00", 1]],
  [["a", "\ud800"], ["a", "\ufffd"]],
];

Keys("identities that differ only in unpaired surrogates get different keys", () => {
  for (const [a, b] of surrogatePairs) {
    assert.is.not(keysFor("ns", a).data, keysFor("ns", b).data, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  }
});

Keys("an ill-formed identity cannot collide with a well-formed one or another shape", () => {
  // Candidates a naive escape could confuse: the escape's own bytes spelled
  // as text, the same code units as a tuple or as a number, U+FFFD itself.
  const ids: Identity[] = [
    "\ud800",
    ["\ud800"],
    "\ufffd",
    ["\ufffd"],
    "\u00d8",
    "\x00\ud800",
    "\ud800\x00",
    ["\ud800", "\ud800"],
    ["\ud800\ud800"],
    ["\ud800", 0],
    ["\ud800", "0"],
    "u:\x00\xd8",
    ["u1:\x00\xd8"],
    [55296],
  ];
  const seen = new Map<string, Identity>();
  for (const id of ids) {
    const key = keysFor("ns", id).data;
    assert.is(seen.get(key), undefined, `${JSON.stringify(id)} shares a key with ${JSON.stringify(seen.get(key))}`);
    seen.set(key, id);
  }
});

Keys("distinct identities made of arbitrary UTF-16 code units never share a key (property)", () => {
  // Few code units, so that random pairs often differ only in surrogates:
  // lone halves, valid pairs, reversed pairs, U+FFFD, and digits and ':' that
  // spell the hash input's own separators; plus any 16-bit code unit.
  const unit = fc.oneof(
    fc.constantFrom("a", "1", ":", "\ud800", "\udc00", "\ud83d", "\ude00", "\ufffd", "\x00"),
    fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
  );
  const text = fc.string({ unit, minLength: 1, maxLength: 4 });
  const identity: fc.Arbitrary<Identity> = fc.oneof(
    text,
    fc.array(fc.oneof(text, fc.string({ unit, maxLength: 3 }), fc.integer({ min: 0, max: 11 })), {
      minLength: 1,
      maxLength: 3,
    }),
  );
  fc.assert(
    fc.property(identity, identity, (a, b) => {
      const same = JSON.stringify(a) === JSON.stringify(b) && typeof a === typeof b;
      return (keysFor("ns", a).data === keysFor("ns", b).data) === same;
    }),
    { numRuns: 5000, seed },
  );
});

Keys("checkNamespace() refuses a namespace with a lone surrogate, which would share keys with another", async () => {
  for (const namespace of ["a\ud800", "\udc00", "😀".slice(0, 1)]) {
    await rejects(
      () => checkNamespace(namespace),
      TypeError,
      `Cannot create pipeline: 'namespace' must not contain a lone surrogate (keys are written as UTF-8), got ${
        JSON.stringify(namespace)
      }`,
    );
  }
  assert.is(checkNamespace("a\ufffd😀"), "a\ufffd😀");
});

const Cache = suite("pipeline() keys with lone surrogates");
const db = useRedis(Cache);

Cache("a value cached for one lone surrogate is never served for another identity", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: "surrogates" });
  try {
    for (const [a, b] of surrogatePairs) {
      assert.is(await cache.get(a, () => "first"), "first");
      assert.is(await cache.get(b, () => "second"), "second", `${JSON.stringify(b)} got ${JSON.stringify(a)}'s value`);
    }
  } finally {
    await cache.close();
  }
});

Keys.run();
Cache.run();
