/**
 * One worker OS process of the chaos run (started by `run.ts`; argv holds
 * its {@linkcode WorkerConfig} as JSON). It opens a RESP3 connection to the
 * cache server through the fault proxy and one to the counter server, builds
 * the full pipeline, and starts gets at a steady rate over Zipf-distributed
 * keys, open loop: a stalled server does not slow the schedule down.
 *
 * It reports on stdout, one JSON object a line (see `protocol.ts`): a record
 * per measurement window, each hang, and remarks on the 64 MB gets.
 * On stdin it takes `drain <ms>` (measure how fast its connection drains raw
 * 1 MB GETs), `burst <n>` (one cached get of the 1 MB value, then n raw
 * GETs of it at once), `huge` (worker 0 only: one get of the 64 MB value
 * through a cache with a 500 ms lease), `settle` (wait for the bursts and
 * huge gets, report what they moved) and `stop` (drain, close, report what
 * never settled, exit).
 *
 * @module
 */
import process from "node:process";
import { createInterface } from "node:readline";
import {
  coalesce,
  connect,
  connectSentinel,
  jitter,
  lease,
  limit,
  pipeline,
  type RedisLike,
  swr,
  xfetch,
} from "../../mod.ts";
import { settings, type WorkerConfig } from "./config.ts";
import { originLoader, type Value } from "./origin.ts";
import { measureDrain, RAW_BIG_KEY, replyBytes } from "./drain_probe.ts";
import { errorClass, errorMessage, type Report } from "./protocol.ts";
import { Windows } from "./windows.ts";
import { zipf } from "../shared/zipf.ts";

const config = JSON.parse(process.argv[process.argv.length - 1]!) as WorkerConfig;
const send = (report: Report) => process.stdout.write(`${JSON.stringify(report)}\n`);
/** A time in notes: ms since the run's t0, as the parent's fault notes give it. */
const at = (epochMs = Date.now()) => `t0+${epochMs - config.t0} ms`;

// The sentinel worker's data connection has no name: connectSentinel's `name` is the master group's.
const redis: RedisLike & { close(): Promise<void>; readonly master?: string } = config.sentinel === undefined
  ? await connect({ url: config.cacheUrl, resp: 3, name: `chaos-w${config.id}` })
  : await connectSentinel({
    sentinels: config.sentinel.urls,
    name: config.sentinel.name,
    resp: 3,
    onEvent: (event) => {
      if (event.type === "failover") {
        send({ t: "note", text: `client's failover event at ${at()}: ${event.from} → ${event.to}` });
      }
    },
  });
/** Where a get was served: the master, for the sentinel worker (a value going backwards names both). */
const server = () => redis.master ?? config.cacheUrl;
const counter = await connect({ url: config.counterUrl, name: `chaos-origin-w${config.id}` });
/** The full pipeline: every strategy, outermost first. */
function fullPipeline(namespace: string, leaseMs: number) {
  return pipeline<Value>(
    { redis, ttlMs: settings.ttlMs, namespace, wakeups: config.wakeups },
    swr({ staleMs: settings.staleMs }),
    xfetch(),
    coalesce(),
    lease({ leaseMs, waitMs: settings.waitMs }),
    jitter({ spreadMs: settings.spreadMs }),
    ...(config.limit ? [limit(settings.limit)] : []),
  );
}
const cache = fullPipeline("chaos", settings.leaseMs);
// A value so large that writing it outlasts its lease: stored once, not rejected as late on every get.
const hugeCache = fullPipeline("chaos-huge", settings.hugeLeaseMs);

const windows = new Windows(config.t0, send);

const loaders = new Map<string, () => Promise<Value>>();
/** The highest version a settled get of each key returned, when it settled, and from which server. */
const seen = new Map<string, { value: Value; settledAt: number; from: string }>();
/** Values going backwards are told in notes, the first few of each worker, to find out how. */
let backwardsTold = 0;
const pending = windows.pending;

/** One get, recorded in its window; resolves what it got (`version <n>`) or the error's class. */
function get(key: string, through = cache): Promise<string> {
  let load = loaders.get(key);
  if (load === undefined) loaders.set(key, load = originLoader(counter, key, config.id));
  // A get must not return an older version than one a get settled before it started.
  const floor = seen.get(key);
  const call = { startedAt: Date.now(), hung: false };
  const started = performance.now();
  pending.add(call);
  return through.get(["chaos", key], load, { timeoutMs: settings.getTimeoutMs }).then(
    (value) => {
      const w = windows.now();
      if (value.k !== key) w.wrong++;
      if (floor !== undefined && value.v < floor.value.v) {
        // Served by another master than the newer one: the old master took that write after the promotion, and the
        // new one never had it (docs/sentinel.md, "What it does not promise"). Counted apart; the same master going back is a bug.
        if (floor.from !== server()) w.lost = (w.lost ?? 0) + 1;
        else w.backwards++;
        if (backwardsTold++ < 5) tellBackwards(key, value, floor, call.startedAt);
      }
      if (value.v > (seen.get(key)?.value.v ?? 0)) seen.set(key, { value, settledAt: Date.now(), from: server() });
      return `version ${value.v}`;
    },
    (error: unknown) => {
      const label = errorClass(error);
      const message = errorMessage(error);
      const w = windows.now();
      w.errors[label] = (w.errors[label] ?? 0) + 1;
      w.messages[message] = (w.messages[message] ?? 0) + 1;
      return label;
    },
  ).finally(() => {
    pending.delete(call);
    const w = windows.now();
    w.gets++;
    w.latencies.push(Math.round((performance.now() - started) * 100) / 100);
    // A call reported as a hang that settles after all is still a hang: it kept its caller far too long.
  });
}

/** Enough to tell which path served it: who loaded each version, when, and when this get began and ended. */
function tellBackwards(
  key: string,
  got: Value,
  floor: { value: Value; settledAt: number; from: string },
  startedAt: number,
): void {
  send({
    t: "note",
    text:
      `backwards in worker ${config.id}: ${key} version ${got.v} from ${server()} (origin call by worker ${got.w} at ${
        at(got.at)
      }) in a get from ${
        at(startedAt)
      } to ${at()}, after version ${floor.value.v} from ${floor.from} (origin call by worker ${floor.value.w} at ${
        at(floor.value.at)
      }, served here at ${at(floor.settledAt)})`,
  });
}

const next = zipf(settings.keys, settings.zipfS);
const startedAt = performance.now();
let issued = 0;
let stopping = false;
const pace = setInterval(() => {
  const due = Math.floor(((performance.now() - startedAt) * config.rate) / 1000);
  // Open loop, but after a long pause of this process catch up one second at most.
  issued = Math.max(issued, due - config.rate);
  while (issued < due) {
    issued++;
    void get(`${config.sentinel === undefined ? "k" : settings.sentinelKeyPrefix}${next()}`);
  }
}, 5);

function flush(all: boolean): void {
  const rss = process.memoryUsage().rss;
  const late = cache.stats().lateRejected + hugeCache.stats().lateRejected;
  const shed = cache.stats().shed + hugeCache.stats().shed;
  windows.flush(all, { rss, late, shed });
}
const reporter = setInterval(() => flush(false), settings.windowMs);

/** The load faults' requests since the last `settle`. */
const load = { pending: new Set<Promise<unknown>>(), requests: 0, bytes: 0, errors: 0, first: 0, last: 0 };
function track(request: Promise<number>): void {
  if (load.requests++ === 0) load.first = performance.now();
  const p = request.then((bytes) => void (load.bytes += bytes), () => void load.errors++)
    .finally(() => {
      load.pending.delete(p);
      load.last = performance.now();
    });
  load.pending.add(p);
}

/** A cached get's outcome as bytes moved: `get()` resolves `version <n>` when served, the error's class otherwise. */
function served(bytes: number): (outcome: string) => number {
  return (outcome) => {
    if (!outcome.startsWith("version ")) throw new Error(outcome);
    return bytes;
  };
}

/**
 * One cached get of the 1 MB value (the cache's path for a large value), then `n` raw GETs of it at once: through
 * the cache, a burst of one key may be served by one read, and the fault must still load the connection.
 */
function burst(n: number): void {
  track(get(settings.bigKey).then(served(settings.bigBytes)));
  for (let i = 0; i < n; i++) track(redis.send(["GET", RAW_BIG_KEY]).then(replyBytes));
}

async function settle(): Promise<void> {
  const settled = await within(Promise.all(load.pending));
  send({
    t: "load",
    requests: load.requests,
    bytes: load.bytes,
    errors: load.errors,
    settled,
    ms: load.requests === 0 ? 0 : Math.round((settled ? load.last : performance.now()) - load.first),
  });
  Object.assign(load, { requests: 0, bytes: 0, errors: 0, first: 0, last: 0 });
}

/** One get of the 64 MB value, its outcome told in a note (the table's counts mix it with every other get). */
async function huge(): Promise<void> {
  const started = performance.now();
  const before = hugeCache.stats();
  const request = get(settings.hugeKey, hugeCache);
  track(request.then(served(settings.hugeBytes)));
  const outcome = await request;
  const after = hugeCache.stats();
  send({
    t: "note",
    text: `64 MB get: ${outcome} after ${Math.round(performance.now() - started)} ms (loads +${
      after.loads - before.loads
    }, late publishes +${after.lateRejected - before.lateRejected}, timeouts +${after.timeouts - before.timeouts})`,
  });
}

/** Settles true when `promise` does, false if it is still pending after the hang bound. */
function within(promise: Promise<unknown>): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<boolean>((r) => timer = setTimeout(() => r(false), settings.hangMs));
  return Promise.race([promise.then(() => true, () => true), late]).finally(() => clearTimeout(timer));
}

async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearInterval(pace);
  const deadline = Date.now() + settings.hangMs;
  while (pending.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  // Whatever is still pending has had the whole bound since the last get started: each is a hang.
  flush(true);
  if (!(await within(Promise.all([cache.close(), hugeCache.close()])))) {
    send({ t: "hang", i: windows.indexOf(Date.now()), what: "cache.close()" });
  }
  if (!(await within(Promise.all([redis.close(), counter.close()])))) {
    send({ t: "hang", i: windows.indexOf(Date.now()), what: "client close()" });
  }
  clearInterval(reporter);
  flush(true);
  send({ t: "done", unsettled: pending.size });
  process.exit(0);
}

createInterface({ input: process.stdin }).on("line", (line) => {
  const [command, arg] = line.split(" ");
  if (command === "burst") burst(Number(arg));
  else if (command === "drain") {
    // A probe that fails reports nothing drained: the parent then refuses to size the faults on it.
    void measureDrain(redis, RAW_BIG_KEY, Number(arg)).catch(() => ({ bytes: 0, ms: Number(arg) }))
      .then((d) => send({ t: "drain", ...d }));
  } else if (command === "settle") void settle();
  else if (line === "huge" && config.id === 0) void huge();
  else if (line === "stop") void stop();
});
// If the parent dies, stdin ends: stop rather than run forever.
process.stdin.on("end", () => void stop());
send({ t: "ready", id: config.id });
