/**
 * What tracing costs when nobody subscribes. Three hit paths, each measured
 * in alternating rounds with no subscriber and with a subscriber on every
 * herdless channel: a near-tier hit (no I/O: the path where a few property
 * reads would show first), a Redis hit, and a raw `send(["GET"])`. The
 * no-subscriber rows are what every user pays; a subscribed row is what
 * OpenTelemetry-style listeners add. Starts its own redis-server (or uses
 * REDIS_URL).
 *
 *   node --import tsx bench/tracing.ts
 */
import { subscribe, tracingChannel, unsubscribe } from "node:diagnostics_channel";
import * as current from "../mod.ts";
import { startRedis } from "../test/support/redis_server.ts";
import { median } from "./report.ts";

const ROUNDS = 8;
const ROUND_MS = 300;

const server = process.env.REDIS_URL === undefined ? await startRedis() : undefined;
const url = process.env.REDIS_URL ?? server!.url;

type Mod = typeof current;
interface Setup {
  near: () => Promise<unknown>;
  hit: () => Promise<unknown>;
  send: () => Promise<unknown>;
  close: () => Promise<void>;
}
async function setup(mod: Mod, tag: string): Promise<Setup> {
  const redis = await mod.connect({ url, resp: 3 });
  const nearCache = mod.pipeline<string>({
    redis,
    ttlMs: 600_000,
    namespace: `bt-near-${tag}`,
  }, mod.near());
  const redisCache = mod.pipeline<string>({
    redis,
    ttlMs: 600_000,
    namespace: `bt-${tag}`,
  });
  await nearCache.get("k", () => "value");
  await redisCache.get("k", () => "value");
  await nearCache.get("k", () => "value");
  return {
    near: () => nearCache.get("k", () => "value"),
    hit: () => redisCache.get("k", () => "value"),
    send: () => redis.send(["GET", "bench-trace-raw"]),
    close: async () => {
      await Promise.all([nearCache.close(), redisCache.close()]);
      await redis.close();
    },
  };
}
// BASE=<a checkout of the code before tracing> adds a column for it, e.g.
//   git archive <commit> | tar -x -C /tmp/base && BASE=/tmp/base node --import tsx bench/tracing.ts
const baseDir = process.env.BASE;
const base = baseDir === undefined ? undefined : await setup((await import(`${baseDir}/mod.ts`)) as Mod, "base");
const here = await setup(current, "here");

const handlers = {
  start() {},
  end() {},
  asyncStart() {},
  asyncEnd() {},
  error() {},
};
const onEvent = () => {};
function listen(on: boolean): void {
  for (const name of ["herdless:get", "herdless:command"]) {
    const tc = tracingChannel(name);
    if (on) tc.subscribe(handlers);
    else tc.unsubscribe(handlers);
  }
  if (on) subscribe("herdless:event", onEvent);
  else unsubscribe("herdless:event", onEvent);
}

/** Calls per second of `op`, awaited in batches of 64 (a pipelined burst, as a server under load sees it). */
async function rate(op: () => Promise<unknown>, ms: number): Promise<number> {
  let calls = 0;
  const end = performance.now() + ms;
  const batch: Promise<unknown>[] = new Array(64);
  while (performance.now() < end) {
    for (let i = 0; i < 64; i++) batch[i] = op();
    await Promise.all(batch);
    calls += 64;
  }
  return calls / (ms / 1000);
}

// NOSUB=1 never subscribes: a subscriber that came and went leaves the
// channels' property reads polymorphic, which is not the state of a process
// that never traces.
const subscribed = process.env.NOSUB === undefined;
const cases: [string, keyof Setup][] = [
  ["near() hit (no I/O)", "near"],
  ["Redis hit", "hit"],
  ['send(["GET"])', "send"],
];
const fmt = (
  x: number | undefined,
) => (x === undefined ? "-" : Math.round(x).toLocaleString("en-US"));
console.log(
  `| path | before tracing (BASE), ops/s | no subscriber, ops/s | subscribed, ops/s |`,
);
console.log(`| --- | ---: | ---: | ---: |`);
for (const [name, which] of cases) {
  const b: number[] = [];
  const off: number[] = [];
  const on: number[] = [];
  if (base !== undefined) await rate(base[which], ROUND_MS); // warm up
  await rate(here[which], ROUND_MS);
  // Alternating rounds, and which goes first alternates too: the first of a
  // pair measured up to 15% apart from the second in trials, either way.
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      if (base !== undefined) b.push(await rate(base[which], ROUND_MS));
      off.push(await rate(here[which], ROUND_MS));
    } else {
      off.push(await rate(here[which], ROUND_MS));
      if (base !== undefined) b.push(await rate(base[which], ROUND_MS));
    }
    if (subscribed) {
      listen(true);
      on.push(await rate(here[which], ROUND_MS));
      listen(false);
    }
  }
  const baseRate = base === undefined ? undefined : median(b);
  console.log(
    `| ${name} | ${fmt(baseRate)} | ${fmt(median(off))} | ${subscribed ? fmt(median(on)) : "-"} |`,
  );
}

// The check itself, alone: what a get pays before it knows nobody listens.
const getTc = tracingChannel("herdless:get");
let hits = 0;
const N = 20_000_000;
const t0 = performance.now();
for (let i = 0; i < N; i++) {
  if (
    getTc.start.hasSubscribers || getTc.end.hasSubscribers ||
    getTc.asyncStart.hasSubscribers ||
    getTc.asyncEnd.hasSubscribers || getTc.error.hasSubscribers
  ) hits++;
}
const ns = ((performance.now() - t0) * 1e6) / N;
console.log(
  `\nthe no-subscriber check alone: ${ns.toFixed(2)} ns per call (${hits} true)`,
);

await base?.close();
await here.close();
await server?.stop();
