/** knownOptions(): the unknown-option check both layers use, with its "did you mean" suggestion. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { abortSignal, closestName, knownOptions } from "../../../resp/shared/mod.ts";
import { rejects } from "../../support/assert.ts";

const known = suite("knownOptions()");
const PIPELINE = ["redis", "ttlMs", "namespace", "negativeTtlMs", "codec"] as const;

known("refuses a key it does not know, suggesting the close one", async () => {
  await rejects(
    () => knownOptions("pipeline()", { redis: 1, nameSpace: "x" }, PIPELINE),
    TypeError,
    "Unknown option 'nameSpace' for pipeline(); did you mean 'namespace'?",
  );
  await rejects(
    () => knownOptions("pipeline()", { ttlms: 1 }, PIPELINE),
    TypeError,
    "Unknown option 'ttlms' for pipeline(); did you mean 'ttlMs'?",
  );
  await rejects(
    () => knownOptions("connect()", { comandTimeoutMs: 1 }, ["connectTimeoutMs", "commandTimeoutMs"]),
    TypeError,
    "Unknown option 'comandTimeoutMs' for connect(); did you mean 'commandTimeoutMs'?",
  );
});

known("says nothing more when no known name is close", async () => {
  await rejects(
    () => knownOptions("pipeline()", { retries: 3 }, PIPELINE),
    TypeError,
    "Unknown option 'retries' for pipeline()",
  );
});

known("names a nested key with its prefix", async () => {
  await rejects(
    () => knownOptions("connect()", { minMS: 1 }, ["minMs", "maxMs"], "reconnect."),
    TypeError,
    "Unknown option 'reconnect.minMS' for connect(); did you mean 'reconnect.minMs'?",
  );
});

known("accepts known keys (even when undefined), an empty object, a Set of names", () => {
  knownOptions("pipeline()", { redis: 1, ttlMs: undefined }, PIPELINE);
  knownOptions("pipeline()", {}, PIPELINE);
  knownOptions("pipeline()", { codec: "json" }, new Set(PIPELINE));
});

known("an unknown key whose value is undefined is still a mistake", async () => {
  await rejects(
    () => knownOptions("pipeline()", { namespce: undefined }, PIPELINE),
    TypeError,
    "Unknown option 'namespce' for pipeline(); did you mean 'namespace'?",
  );
});

const close = suite("closestName()");
close("case, a typo, a swap, a missing or extra letter are close; the rest is not", () => {
  const names = ["timeoutMs", "signal", "buffers", "db", "tls"];
  assert.is(closestName("TimeoutMS", names), "timeoutMs");
  assert.is(closestName("timeout", names), "timeoutMs");
  assert.is(closestName("timoeutMs", names), "timeoutMs");
  assert.is(closestName("signl", names), "signal");
  assert.is(closestName("buffer", names), "buffers");
  assert.is(closestName("DB", names), "db");
  assert.is(closestName("x", names), undefined);
  assert.is(closestName("ttl", names), undefined);
  // No name within the edit bound: the one that begins as the key does.
  assert.is(closestName("leaseTime", ["leaseMs", "waitMs", "renew", "pollMs"]), "leaseMs");
  assert.is(closestName("ttl", ["ttlMs", "tags"]), "ttlMs");
  // Two names begin that way: none is suggested.
  assert.is(closestName("maxThing", ["maxEntries", "maxBytes"]), undefined);
  assert.is(closestName("retries", names), undefined);
});
close("the nearest wins, the first of equals", () => {
  assert.is(closestName("maxMS", ["minMs", "maxMs"]), "maxMs");
  assert.is(closestName("mxMs", ["minMs", "maxMs"]), "maxMs");
});

const signal = suite("abortSignal()");
signal("accepts an AbortSignal, refuses anything else naming the setting", async () => {
  const s = new AbortController().signal;
  assert.is(abortSignal("send", "signal", s), s);
  for (const bad of [true, "abort", {}, { aborted: false }, () => {}]) {
    await rejects(
      () => abortSignal("send", "signal", bad),
      TypeError,
      /^Cannot send: 'signal' must be an AbortSignal, got /,
    );
  }
});

known.run();
close.run();
signal.run();
