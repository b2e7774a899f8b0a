/**
 * Coherence lag: how long after a write is acknowledged another process'
 * near tier stops serving the old value.
 *
 * Three processes. A writer (`cache.set()` of one hot identity through a
 * herdless pipeline without `near()`, on its own connection) and a reader
 * (`near(), coalesce(), lease()` on another connection, polling `cache.get`
 * in a loop that yields to the event loop between reads with
 * `setImmediate`, so invalidation pushes are handled as they arrive). The
 * parent paces them: it tells the writer to write version i only once the
 * reader has seen version i - 1, so every write is observed on its own.
 *
 * Clock: both children stamp events with `process.hrtime.bigint()`, which is
 * CLOCK_MONOTONIC on Linux (libuv's `uv_hrtime`, Bun alike): one clock for
 * every process on the machine, so a reader's stamp minus a writer's stamp
 * is a real interval, with no wall clock or NTP step in it. The parent checks
 * it: a child's first stamp must fall between the parent's own stamps taken
 * before spawning it and after hearing from it.
 *
 * lag(i) = (the reader's first read that returned version i, stamped when
 * that read resolved) - (the writer's `set()` for i resolved). Stamping at the
 * read's resolution makes it an upper bound of when the old value stopped
 * being served; the writer's stamp before sending is kept too ("from send").
 *
 * The node-redis 5 `clientSideCache` row does the same with a node-redis
 * reader and a plain node-redis `SET` writer, for scale.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import process from "node:process";
import { connect } from "../resp/mod.ts";
import { CACHE_TTL_MS, herdlessPipeline } from "./caches.ts";
import { cacheValue } from "./item.ts";
import { CL, NEAR } from "./layers.ts";

export type CoherenceVariant = "herdless" | "node-redis-csc";
export const COHERENCE_VARIANTS: readonly CoherenceVariant[] = [
  "herdless",
  "node-redis-csc",
];
export const COHERENCE_LABELS: Record<CoherenceVariant, string> = {
  herdless: "herdless `near()` reader, `cache.set()` writer",
  "node-redis-csc": "node-redis 5 `clientSideCache` reader, node-redis `SET` writer",
};

const HOT_ID = "hot";
const HOT_KEY = "bench:coherence:csc:hot";
const NAMESPACE = "bench:coherence";

/** What a coherence child is asked to do. */
export interface CoherenceTask {
  kind: "coherence";
  role: "reader" | "writer";
  variant: CoherenceVariant;
  url: string;
}

const now = () => process.hrtime.bigint();
const say = (line: string) => process.stdout.write(line + "\n");

/** A value carrying its version: 120 bytes of JSON like the cache table's. */
function version(v: number) {
  const value = cacheValue(v);
  return value;
}

/** Writer role: write version 0, then one version per "next" line on stdin; "stop" ends. */
export async function coherenceWriter(task: CoherenceTask): Promise<void> {
  say(`clock ${now()}`);
  let write: (v: number) => Promise<unknown>;
  let close: () => Promise<unknown>;
  if (task.variant === "herdless") {
    const redis = await connect({ url: task.url, resp: 3 });
    const cache = herdlessPipeline(redis, NAMESPACE, CL);
    write = (v) => cache.set(HOT_ID, version(v));
    close = async () => {
      await cache.close();
      await redis.close();
    };
  } else {
    const { createClient } = await import("redis");
    const client = createClient({ url: task.url });
    await client.connect();
    write = (v) => client.set(HOT_KEY, JSON.stringify(version(v)), { PX: CACHE_TTL_MS });
    close = () => client.quit();
  }
  await write(0);
  say("ready");
  let v = 0;
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === "stop") break;
    v++;
    const sent = now();
    await write(v);
    const acked = now();
    say(`ack ${v} ${sent} ${acked}`);
  }
  await close();
}

/** Reader role: poll the hot key until "stop" on stdin, printing the first time each version is seen. */
export async function coherenceReader(task: CoherenceTask): Promise<void> {
  say(`clock ${now()}`);
  let loads = 0;
  let read: () => Promise<{ id: number }>;
  let close: () => Promise<unknown>;
  let stats: () => Record<string, number> = () => ({});
  if (task.variant === "herdless") {
    const redis = await connect({ url: task.url, resp: 3 });
    const cache = herdlessPipeline(redis, NAMESPACE, [NEAR, ...CL]);
    const loader = () => {
      loads++;
      return version(-1);
    };
    read = () => cache.get(HOT_ID, loader) as Promise<{ id: number }>;
    stats = () => cache.stats();
    close = async () => {
      await cache.close();
      await redis.close();
    };
  } else {
    const { createClient } = await import("redis");
    const client = createClient({
      url: task.url,
      RESP: 3,
      clientSideCache: {
        ttl: 0,
        maxEntries: 0,
        evictPolicy: "FIFO",
        recordStats: false,
      },
    });
    await client.connect();
    read = async () => {
      const raw = await client.get(HOT_KEY);
      if (raw === null) {
        loads++;
        return version(-1);
      }
      return JSON.parse(raw) as { id: number };
    };
    close = () => client.quit();
  }
  let stopped = false;
  let last = -1;
  let polls = 0;
  let regressions = 0;
  const started = now();
  let ready = false;
  // herdless only: the moment the old entry left the near tier, seen as nearInvalidations growing between two reads.
  let invalidations = stats().nearInvalidations;
  const done = new Promise<void>((resolve) => {
    const loop = () => {
      if (invalidations !== undefined) {
        const count = stats().nearInvalidations;
        if (count !== undefined && count > invalidations) {
          invalidations = count;
          say(`inval ${now()}`);
        }
      }
      read().then((value) => {
        const t = now();
        polls++;
        const v = value.id;
        if (v > last) {
          last = v;
          say(`seen ${v} ${t}`);
          if (!ready && v >= 0) {
            ready = true;
            say("ready");
          }
        } else if (v < last) regressions++;
        if (stopped) resolve();
        else setImmediate(loop);
      }, (error) => {
        say(`error ${error instanceof Error ? error.message : String(error)}`);
        resolve();
      });
    };
    loop();
  });
  createInterface({ input: process.stdin }).on("line", (line) => {
    if (line === "stop") stopped = true;
  });
  await done;
  const elapsedNs = Number(now() - started);
  const s = stats();
  say(
    `done ${
      JSON.stringify({
        polls,
        pollUs: elapsedNs / 1000 / Math.max(1, polls),
        regressions,
        loads,
        nearHits: s.nearHits,
        nearInvalidations: s.nearInvalidations,
      })
    }`,
  );
  await close();
}

/** What the parent reports for one variant. */
export interface CoherenceResult {
  variant: CoherenceVariant;
  writes: number;
  /** lag from the write's acknowledgement, µs, sorted. */
  lagUs: number[];
  /** lag from the moment the write was sent, µs, sorted. */
  fromSendUs: number[];
  /**
   * herdless only: from the write's acknowledgement until the reader's poll
   * loop saw its near tier drop the old entry (`nearInvalidations` grew), µs,
   * sorted: the lag without the re-read's round trip.
   */
  droppedUs?: number[];
  /** Writes whose new version the reader had not seen within 1 s. */
  timeouts: number;
  /** Reads that returned an older version after a newer one had been seen. */
  regressions?: number;
  polls?: number;
  pollUs?: number;
  loads?: number;
  nearHits?: number;
  nearInvalidations?: number;
  clockCheck: string;
  error?: string;
}

interface Child {
  lines: AsyncIterator<string>;
  send(line: string): void;
  exited: Promise<number | null>;
  kill(): void;
  stderr(): string;
}

function start(
  worker: string,
  task: CoherenceTask,
  core: string | undefined,
): Child {
  const args = [worker, JSON.stringify(task)];
  const [cmd, argv] = core === undefined
    ? [process.execPath, args]
    : ["taskset", ["-c", core, process.execPath, ...args]];
  const child = spawn(cmd, argv, { stdio: ["pipe", "pipe", "pipe"] });
  let err = "";
  child.stderr.on("data", (d) => (err = (err + d).slice(-2000)));
  const lines = createInterface({ input: child.stdout })
    [Symbol.asyncIterator]();
  return {
    lines,
    send: (line) => child.stdin.write(line + "\n"),
    exited: new Promise((resolve) => child.on("close", resolve)),
    kill: () => child.kill("SIGKILL"),
    stderr: () => err.trim(),
  };
}

/** The next line of `child` within `ms`, or undefined when it ended or ran out of time. */
async function next(child: Child, ms: number): Promise<string | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<undefined>((
    resolve,
  ) => (timer = setTimeout(() => resolve(undefined), ms)));
  const r = await Promise.race([
    child.lines.next().then((x) => (x.done ? undefined : x.value)),
    timeout,
  ]);
  clearTimeout(timer);
  return r;
}

async function expect(
  child: Child,
  prefix: string,
  ms: number,
  who: string,
): Promise<string> {
  for (;;) {
    const line = await next(child, ms);
    if (line === undefined) {
      throw new Error(
        `${who} said nothing for ${ms} ms (${child.stderr() || "no stderr"})`,
      );
    }
    if (line.startsWith("error ")) throw new Error(`${who}: ${line.slice(6)}`);
    if (line.startsWith(prefix)) return line;
  }
}

/** The reader's "seen" lines, read in the background; resolves waiters by version. */
class Sightings {
  readonly #seen = new Map<number, bigint>();
  /** When the reader saw its near tier drop an entry, in order. */
  readonly #invalidated: bigint[] = [];
  #waiter: { v: number; resolve: () => void } | undefined;
  #done: string | undefined;
  #error: string | undefined;
  constructor(reader: Child) {
    void (async () => {
      for (;;) {
        const r = await reader.lines.next();
        if (r.done) break;
        const line = r.value;
        if (line.startsWith("seen ")) {
          const [, v, t] = line.split(" ");
          this.#seen.set(Number(v), BigInt(t!));
          if (this.#waiter !== undefined && Number(v) >= this.#waiter.v) {
            this.#waiter.resolve();
          }
        } else if (line.startsWith("inval ")) {
          this.#invalidated.push(BigInt(line.slice(6)));
        } else if (line.startsWith("done ")) this.#done = line.slice(5);
        else if (line.startsWith("error ")) this.#error = line.slice(6);
      }
      this.#waiter?.resolve();
    })();
  }
  get done(): string | undefined {
    return this.#done;
  }
  get error(): string | undefined {
    return this.#error;
  }
  at(v: number): bigint | undefined {
    return this.#seen.get(v);
  }
  /** The first time the tier dropped an entry at or after `t`. */
  invalidatedAfter(t: bigint): bigint | undefined {
    return this.#invalidated.find((x) => x >= t);
  }
  /** Wait until version `v` (or a later one) was seen, at most `ms`. */
  async wait(v: number, ms: number): Promise<boolean> {
    for (const seen of this.#seen.keys()) if (seen >= v) return true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const seen = await new Promise<boolean>((resolve) => {
      this.#waiter = { v, resolve: () => resolve(true) };
      timer = setTimeout(() => resolve(false), ms);
    });
    clearTimeout(timer);
    this.#waiter = undefined;
    return seen;
  }
}

/**
 * Run one variant: writer on core `writerCore`, reader on core `readerCore`
 * (undefined: unpinned), `writes` paced writes.
 */
export async function runCoherence(
  worker: string,
  variant: CoherenceVariant,
  url: string,
  writes: number,
  cores: { reader?: string; writer?: string },
): Promise<CoherenceResult> {
  const base = {
    variant,
    writes,
    lagUs: [],
    fromSendUs: [],
    timeouts: 0,
    clockCheck: "-",
  };
  const checks: string[] = [];
  const clockOf = async (child: Child, before: bigint, who: string) => {
    const line = await expect(child, "clock ", 30_000, who);
    const after = now();
    const t = BigInt(line.slice(6));
    checks.push(
      before <= t && t <= after ? "ok" : `FAILED (${who} ${t} not in [${before}, ${after}])`,
    );
  };
  let writer: Child | undefined;
  let reader: Child | undefined;
  try {
    let t = now();
    writer = start(
      worker,
      { kind: "coherence", role: "writer", variant, url },
      cores.writer,
    );
    await clockOf(writer, t, "writer");
    await expect(writer, "ready", 30_000, "writer");
    t = now();
    reader = start(
      worker,
      { kind: "coherence", role: "reader", variant, url },
      cores.reader,
    );
    await clockOf(reader, t, "reader");
    await expect(reader, "ready", 30_000, "reader");
    const sightings = new Sightings(reader);
    const lag: number[] = [];
    const fromSend: number[] = [];
    const droppedAfterAck: number[] = [];
    let timeouts = 0;
    for (let v = 1; v <= writes; v++) {
      writer.send("next");
      const ack = await expect(writer, "ack ", 10_000, "writer");
      const [, av, sent, acked] = ack.split(" ");
      if (Number(av) !== v) {
        throw new Error(`writer acknowledged version ${av}, expected ${v}`);
      }
      if (!(await sightings.wait(v, 1_000))) {
        if (sightings.error !== undefined) {
          throw new Error(`reader: ${sightings.error}`);
        }
        timeouts++;
        continue;
      }
      const seen = sightings.at(v);
      if (seen === undefined) {
        // A later version was seen first: v itself was never served, which is no lag to count.
        continue;
      }
      lag.push(Number(seen - BigInt(acked!)) / 1000);
      fromSend.push(Number(seen - BigInt(sent!)) / 1000);
      const dropped = sightings.invalidatedAfter(BigInt(sent!));
      if (dropped !== undefined && dropped <= seen) {
        droppedAfterAck.push(Number(dropped - BigInt(acked!)) / 1000);
      }
    }
    writer.send("stop");
    reader.send("stop");
    const done = await (async () => {
      for (let i = 0; i < 100 && sightings.done === undefined; i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      return sightings.done;
    })();
    const extra = done === undefined ? {} : (JSON.parse(done) as Partial<CoherenceResult>);
    await Promise.race([
      Promise.all([writer.exited, reader.exited]),
      new Promise((r) => setTimeout(r, 5_000)),
    ]);
    return {
      ...base,
      ...extra,
      lagUs: lag.sort((a, b) => a - b),
      fromSendUs: fromSend.sort((a, b) => a - b),
      droppedUs: droppedAfterAck.sort((a, b) => a - b),
      timeouts,
      clockCheck: checks.every((c) => c === "ok") ? "ok" : checks.join(", "),
    };
  } catch (error) {
    return {
      ...base,
      clockCheck: checks.join(", ") || "-",
      error: error instanceof Error ? error.message : String(error),
    };
  } finally {
    writer?.kill();
    reader?.kill();
  }
}

/** The q-quantile of sorted `xs` (nearest rank). */
export function quantile(xs: readonly number[], q: number): number | undefined {
  if (xs.length === 0) return undefined;
  return xs[Math.min(xs.length - 1, Math.max(0, Math.ceil(q * xs.length) - 1))];
}
