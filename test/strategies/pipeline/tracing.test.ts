import { subscribe, tracingChannel, unsubscribe } from "node:diagnostics_channel";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { CommandTraceContext } from "../../../resp/types.ts";
import type { GetTraceContext } from "../../../strategies/cache.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import { lease } from "../../../strategies/lease.ts";
import type { CacheEventMessage } from "../../../strategies/events.ts";
import type { Identity } from "../../../strategies/types.ts";
import { rejects } from "../../support/assert.ts";
import { useRedis } from "../../support/fixture.ts";

interface Seen<C> {
  phase: string;
  context: C;
}

/** Subscribe to every phase of a TracingChannel; returns what was seen and the unsubscribe. */
function watch<C>(name: string): { seen: Seen<C>[]; stop: () => void } {
  const seen: Seen<C>[] = [];
  const tc = tracingChannel(name);
  const handlers = {
    start: (c: unknown) => seen.push({ phase: "start", context: c as C }),
    end: (c: unknown) => seen.push({ phase: "end", context: c as C }),
    asyncStart: (c: unknown) => seen.push({ phase: "asyncStart", context: c as C }),
    asyncEnd: (c: unknown) => seen.push({ phase: "asyncEnd", context: c as C }),
    error: (c: unknown) => seen.push({ phase: "error", context: c as C }),
  };
  tc.subscribe(handlers as never);
  return { seen, stop: () => tc.unsubscribe(handlers as never) };
}

function watchEvents(): { seen: CacheEventMessage[]; stop: () => void } {
  const seen: CacheEventMessage[] = [];
  const listener = (message: unknown) => seen.push(message as CacheEventMessage);
  subscribe("herdless:event", listener);
  return { seen, stop: () => unsubscribe("herdless:event", listener) };
}

const Tracing = suite("tracing");
const db = useRedis(Tracing, { prefix: "trace" });

Tracing("herdless:get traces a get with namespace, key, the label as identity, and the value as result", async () => {
  const namespace = db.ns();
  const labels: Identity[] = [];
  const label = (id: Identity) => {
    labels.push(id);
    return `user/${(id as readonly unknown[])[0]}`;
  };
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 5000, namespace, label }, lease());
  const trace = watch<GetTraceContext>("herdless:get");
  try {
    assert.is(await cache.get(["tenant-a", 42], () => "Ada"), "Ada");
    await rejects(
      () => cache.get(["tenant-b", 7], () => Promise.reject(new Error("origin down"))),
      Error,
      "origin down",
    );
  } finally {
    trace.stop();
  }
  const key = cache.keys(["tenant-a", 42]).data;
  assert.equal(trace.seen.filter((s) => s.context.key === key).map((s) => s.phase), [
    "start",
    "end",
    "asyncStart",
    "asyncEnd",
  ]);
  const ok = trace.seen[0]!.context;
  assert.equal({ ...ok }, { namespace, key, identity: "user/tenant-a", result: "Ada" });
  const failed = trace.seen.filter((s) => s.context.key !== key);
  assert.equal(failed.map((s) => s.phase), ["start", "end", "error", "asyncStart", "asyncEnd"]);
  assert.is((failed[0]!.context.error as Error).message, "origin down");
  assert.is(failed[0]!.context.identity, "user/tenant-b");
  assert.ok(labels.length > 0);
  await cache.close();
});

Tracing("without a label, a traced get names the hashed data key, never the identity", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 5000, namespace: db.ns() });
  const trace = watch<GetTraceContext>("herdless:get");
  try {
    await cache.get(["alice@example.com"], () => "secret");
  } finally {
    trace.stop();
  }
  const context = trace.seen[0]!.context;
  assert.is(context.identity, cache.keys(["alice@example.com"]).data);
  assert.not.match(JSON.stringify({ ...context, result: undefined }), /alice/);
  await cache.close();
});

Tracing(
  "with nobody listening nothing is built: the label is never called and no event object reaches a channel",
  async () => {
    let calls = 0;
    const cache = pipeline<string>({
      redis: db.redis,
      ttlMs: 5000,
      namespace: db.ns(),
      label: () => {
        calls++;
        return "l";
      },
    });
    await cache.get("quiet", () => "v");
    await cache.get("quiet", () => "v");
    assert.is(calls, 0);
    assert.is(cache.stats().hits, 1);
    // A subscriber that came and went leaves the same state.
    const trace = watch<GetTraceContext>("herdless:get");
    trace.stop();
    await cache.get("quiet", () => "v");
    assert.is(calls, 0);
    await cache.close();
  },
);

Tracing(
  "a label that throws never fails a get: the key stands in, the failure is counted; a label that is not a function is refused",
  async () => {
    const cache = pipeline<string>({
      redis: db.redis,
      ttlMs: 5000,
      namespace: db.ns(),
      label: () => {
        throw new Error("broken label");
      },
    });
    const trace = watch<GetTraceContext>("herdless:get");
    try {
      assert.is(await cache.get("x", () => "v"), "v");
    } finally {
      trace.stop();
    }
    assert.is(trace.seen[0]!.context.identity, cache.keys("x").data);
    assert.ok(cache.stats().eventErrors >= 1);
    await cache.close();
    await rejects(
      () => pipeline({ redis: db.redis, ttlMs: 5000, label: "user" as never }),
      TypeError,
      "Cannot create pipeline: 'label' must be a function, got string",
    );
  },
);

Tracing("herdless:event publishes every event with its namespace and label, and stops when unsubscribed", async () => {
  const namespace = db.ns();
  const cache = pipeline<string>(
    { redis: db.redis, ttlMs: 5000, namespace, label: (id) => `page:${String(id)}` },
    lease(),
  );
  const events = watchEvents();
  try {
    await cache.get("home", () => "<h1>");
    await cache.get("home", () => "<h1>");
  } finally {
    events.stop();
  }
  const key = cache.keys("home").data;
  const mine = events.seen.filter((e) => e.namespace === namespace);
  assert.equal(mine.map((e) => e.type), ["invalidation-mode", "miss", "lease-won", "load-start", "load-end", "hit"]);
  // The mode is the cache's, not a key's: no key, no label.
  assert.equal(mine[0], { type: "invalidation-mode", mode: "tracking", reason: "client tracking on", namespace });
  for (const e of mine.slice(1)) {
    assert.is((e as { key: string }).key, key);
    assert.is(e.label, "page:home");
  }
  const before = events.seen.length;
  await cache.get("home", () => "<h1>");
  assert.is(events.seen.length, before);
  await cache.close();
});

Tracing("herdless:command traces each command by name and server, never its arguments", async () => {
  const trace = watch<CommandTraceContext>("herdless:command");
  try {
    await db.redis.send(["SET", "trace:secret-key", "secret-value"]);
    await rejects(() => db.redis.send(["NOSUCHCOMMAND", "x"]), Error, /unknown command/);
  } finally {
    trace.stop();
  }
  const address = `127.0.0.1:${db.server.port}`;
  const set = trace.seen.filter((s) => s.context.command === "SET");
  assert.equal(set.map((s) => s.phase), ["start", "end", "asyncStart", "asyncEnd"]);
  assert.equal({ ...set[0]!.context }, { command: "SET", server: address, result: "OK" });
  assert.not.match(JSON.stringify(set[0]!.context), /secret/);
  const bad = trace.seen.filter((s) => s.context.command === "NOSUCHCOMMAND");
  assert.equal(bad.map((s) => s.phase), ["start", "end", "error", "asyncStart", "asyncEnd"]);
  // Gone once unsubscribed.
  const before = trace.seen.length;
  await db.redis.send(["PING"]);
  assert.is(trace.seen.length, before);
});

Tracing.run();
