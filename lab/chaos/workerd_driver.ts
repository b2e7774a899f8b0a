/**
 * The workerd client of the chaos run, an OS process of its own (started by
 * `run.ts` through `workers.ts`; argv holds its {@linkcode WorkerdClientConfig}
 * as JSON). It starts `workerd_worker.js` under the real workerd runtime
 * (the miniflare package pinned in test/workerd/, as the workerd tests do,
 * importing the built package) and sends it requests at a steady rate, open
 * loop, over the proxy workers' Zipf keys. The Worker reaches the cache
 * server through a fault proxy of its own that takes every network fault the
 * workers' proxy takes, so it lives through every fault.
 *
 * It speaks the workers' protocol (`protocol.ts`): a window a line, hangs,
 * `ready` once workerd answers. On stdin, `start` starts the requests (the
 * parent sends it once every population is up), `quiesce` stops them and
 * answers `done` once they settled (the parent then counts the Worker's
 * connections left on the server, before workerd goes), `stop` stops
 * workerd and exits. A get served a lower version of its key than a request
 * that settled before it started is counted as backwards, as in a worker:
 * here every request is its own pipeline, so that is the order across
 * processes that docs/production.md states.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { createInterface } from "node:readline";
import { settings } from "./config.ts";
import { errorClass, errorMessage, type Report, type Window } from "./protocol.ts";
import { Windows } from "./windows.ts";
import { zipf } from "../shared/zipf.ts";
import { startWorkerd, type Workerd } from "../../test/workerd/_workerd.ts";

/** What the driver is told. */
export interface WorkerdClientConfig {
  id: number;
  /** The cache server, through the workerd client's fault proxy. */
  cacheUrl: string;
  counterUrl: string;
  t0: number;
  /** Requests per second. */
  rate: number;
  /** False to leave `limit()` out of the Worker's pipeline, as `--no-limit` does for the workers. */
  limit: boolean;
}

const config = JSON.parse(process.argv[process.argv.length - 1]!) as WorkerdClientConfig;
const send = (report: Report) => process.stdout.write(`${JSON.stringify(report)}\n`);

let workerd: Workerd;
try {
  workerd = await startWorkerd({
    worker: readFileSync(new URL("./workerd_worker.js", import.meta.url), "utf8"),
    bindings: {
      CACHE_URL: config.cacheUrl,
      COUNTER_URL: config.counterUrl,
      SETTINGS: JSON.stringify({
        ttlMs: settings.ttlMs,
        staleMs: settings.staleMs,
        leaseMs: settings.leaseMs,
        waitMs: settings.waitMs,
        spreadMs: settings.spreadMs,
        limit: config.limit ? settings.limit : null,
        getTimeoutMs: settings.getTimeoutMs,
        originMs: settings.originMs,
        valueBytes: settings.valueBytes,
      }),
    },
  });
  // One request before `ready`: workerd is up and the Worker loads (a cold start is not the first window's).
  await workerd.fetch("/get?key=k0");
} catch (error) {
  // The parent reports this note as the reason the workerd client did not run.
  send({ t: "note", text: `workerd did not start: ${errorMessage(error)}` });
  process.exit(1);
}

const windows = new Windows<{ readonly startedAt: number; hung: boolean; done: Promise<void> }>(config.t0, send);

const seen = new Map<string, { v: number; at: number }>();
const pending = windows.pending;
let told = 0;

/** One request to the Worker, recorded in the window it settles in. */
function request(key: string): void {
  const floor = seen.get(key);
  const started = performance.now();
  const call = { startedAt: Date.now(), hung: false, done: Promise.resolve() };
  pending.add(call);
  call.done = workerd.fetch(`/get?key=${key}`).then(
    ({ status, body }) => {
      const w = windows.now();
      if (status === 200 && typeof body?.v === "number") {
        if (body.k !== key) w.wrong++;
        if (floor !== undefined && body.v < floor.v) {
          w.backwards++;
          if (told++ < 5) {
            send({
              t: "note",
              text: `workerd backwards: ${key} version ${body.v} after version ${floor.v}, ${
                Date.now() - floor.at
              } ms earlier`,
            });
          }
        }
        if (body.v > (seen.get(key)?.v ?? 0)) seen.set(key, { v: body.v, at: Date.now() });
        return;
      }
      // The Worker's own rejection, named as a worker names it; anything else is workerd's.
      const e = body?.error as { name?: string; code?: string; message?: string } | undefined;
      const error = e === undefined
        ? Object.assign(new Error(`status ${status}: ${String(body).slice(0, 80)}`), { name: "WorkerdError" })
        : Object.assign(new Error(e.message), { name: e.name ?? "Error", code: e.code });
      count(w, error);
    },
    (error: unknown) => count(windows.now(), error),
  ).finally(() => {
    pending.delete(call);
    const w = windows.now();
    w.gets++;
    w.latencies.push(Math.round((performance.now() - started) * 100) / 100);
  });
}

function count(w: Window, error: unknown): void {
  const message = errorMessage(error);
  const label = errorClass(error);
  w.errors[label] = (w.errors[label] ?? 0) + 1;
  w.messages[message] = (w.messages[message] ?? 0) + 1;
}

const next = zipf(settings.keys, settings.zipfS);
let startedAt = 0;
let issued = 0;
/**
 * Open loop, but not without bound: one workerd process runs every request on one thread, and on a starved machine
 * an unbounded backlog only grows (each waiting request holds a socket and timers). Past this many in flight the
 * driver skips requests and says so in a note; what is in flight is still timed, and a hang is still a hang.
 */
const maxInFlight = 4 * config.rate;
let skipping: { from: number; skipped: number } | undefined;
let pace: ReturnType<typeof setInterval> | undefined;
/** The requests begin on `start`, when every population is up: not while the workers' processes are still loading. */
function start(): void {
  if (pace !== undefined || stopping) return;
  startedAt = performance.now();
  pace = setInterval(tick, 5);
}
function tick(): void {
  const due = Math.floor(((performance.now() - startedAt) * config.rate) / 1000);
  issued = Math.max(issued, due - config.rate);
  while (issued < due) {
    issued++;
    if (pending.size >= maxInFlight) {
      skipping ??= { from: Date.now(), skipped: 0 };
      skipping.skipped++;
      continue;
    }
    if (skipping !== undefined) {
      send({
        t: "note",
        text: `${skipping.skipped} requests not sent over ${
          Date.now() - skipping.from
        } ms: ${maxInFlight} were in flight (the driver's bound)`,
      });
      skipping = undefined;
    }
    request(`k${next()}`);
  }
}

function flush(all: boolean): void {
  windows.flush(all);
}
const reporter = setInterval(() => flush(false), settings.windowMs);

/** Stop the requests; wait (at most the hang bound) for those in flight; whatever is left is a hang. */
async function quiesce(): Promise<void> {
  if (pace !== undefined) clearInterval(pace);
  pace = undefined;
  const deadline = Date.now() + settings.hangMs;
  while (pending.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (skipping !== undefined) {
    send({ t: "note", text: `${skipping.skipped} requests not sent until the end: ${maxInFlight} were in flight` });
    skipping = undefined;
  }
  flush(true);
  send({ t: "done", unsettled: pending.size });
}

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await quiesce();
  clearInterval(reporter);
  await workerd.dispose();
  process.exit(0);
}

createInterface({ input: process.stdin }).on("line", (line) => {
  if (line === "start") start();
  else if (line === "quiesce") void quiesce();
  else if (line === "stop") void stop();
});
process.stdin.on("end", () => void stop());
send({ t: "ready", id: config.id });
