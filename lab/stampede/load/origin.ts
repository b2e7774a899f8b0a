/**
 * The simulated origin (a database or upstream API that does not exist): it
 * counts calls, tracks how many run at once, and records when each started.
 *
 * Service time follows processor sharing: every call needs `baseMs` of work,
 * and while `n` calls run each progresses at `1 / (1 + slowdown * n)`, so a
 * call alone takes `baseMs` and a call among n others about
 * `baseMs * (1 + slowdown * n)`. Unlike a latency fixed at start, the first
 * call slows down too when a herd arrives behind it: that is the feedback
 * loop that stretches a miss window into an outage.
 *
 * The loader's abort signal is ignored on purpose: a real database keeps
 * running a query after the client gave up, and that abandoned work is what
 * piles up. `maxMs` plays the statement timeout, so every call ends.
 *
 * @module
 */
import { clearTimeout, setTimeout } from "node:timers";

/** How the simulated origin behaves. */
export interface OriginOptions {
  /** Service time of one call running alone, in ms. */
  baseMs: number;
  /** How much each call in flight slows every call (0: a fixed latency). @default {0} */
  slowdown?: number;
  /** A call still running after this long fails (the statement timeout). @default {10000} */
  maxMs?: number;
  /** True while the origin is down, given ms since the clock started; a call started then fails after its service time. */
  failing?: (atMs: number) => boolean;
  /** Width of one bucket of the time series, in ms. */
  bucketMs: number;
  /** How many buckets the series holds; later calls land in the last one. */
  buckets: number;
}

interface Call {
  readonly startedAt: number;
  /** The key it loads, when the caller said. */
  readonly key: number | undefined;
  /** Virtual time at which its work is done. */
  readonly finishV: number;
  readonly fails: boolean;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/** A fake origin with exact counters (one per strategy set, so counts never mix). */
export class SimOrigin {
  readonly #base: number;
  readonly #slowdown: number;
  readonly #maxMs: number;
  readonly #failing: (atMs: number) => boolean;
  readonly #bucketMs: number;
  /** FIFO: with equal work and a monotonic virtual clock, calls finish in arrival order. */
  readonly #running: Call[] = [];
  #v = 0;
  #vAt = performance.now();
  #timer: ReturnType<typeof setTimeout> | undefined;
  // Until start(), calls (the warm-up) land before the clock: never in an outage, bucket 0.
  #t0 = Infinity;

  /** Calls started since `start()`. */
  calls = 0;
  /** Calls that failed (outage or statement timeout) since `start()`. */
  errors = 0;
  /** Most calls running at once since `start()`. */
  peak = 0;
  /** Most calls of one key running at once since `start()` (counted for calls given their key). */
  peakPerKey = 0;
  readonly #perKey = new Map<number, number>();
  /** Calls started per bucket since `start()`. */
  series: number[];

  constructor(options: OriginOptions) {
    this.#base = options.baseMs;
    this.#slowdown = options.slowdown ?? 0;
    this.#maxMs = options.maxMs ?? 10_000;
    this.#failing = options.failing ?? (() => false);
    this.#bucketMs = options.bucketMs;
    this.series = new Array<number>(options.buckets).fill(0);
  }

  /** Calls running now. */
  get inflight(): number {
    return this.#running.length;
  }

  /** Start the clock and zero the counters (warm-up calls before this are not counted). */
  start(t0: number): void {
    this.#t0 = t0;
    this.calls = 0;
    this.errors = 0;
    this.peak = this.#running.length;
    this.peakPerKey = Math.max(0, ...this.#perKey.values());
    this.series.fill(0);
  }

  /** One origin call (of `key`, when given): resolves a value after its service time, or rejects while the origin is down. */
  call(key?: number): Promise<string> {
    const now = performance.now();
    this.#advance(now);
    const n = ++this.calls;
    const at = now - this.#t0;
    const bucket = Math.min(this.series.length - 1, Math.max(0, Math.floor(at / this.#bucketMs)));
    this.series[bucket]!++;
    if (key !== undefined) {
      const same = (this.#perKey.get(key) ?? 0) + 1;
      this.#perKey.set(key, same);
      this.peakPerKey = Math.max(this.peakPerKey, same);
    }
    return new Promise<string>((resolve, reject) => {
      this.#running.push({
        startedAt: now,
        key,
        finishV: this.#v + this.#base,
        fails: this.#failing(at),
        resolve: () => resolve(`value-${n}`),
        reject,
      });
      this.peak = Math.max(this.peak, this.#running.length);
      this.#schedule(now);
    });
  }

  // Move the virtual clock to `now` at the speed the current load allows.
  #advance(now: number): void {
    this.#v += (now - this.#vAt) / (1 + this.#slowdown * this.#running.length);
    this.#vAt = now;
  }

  #schedule(now: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const head = this.#running[0];
    if (head === undefined) return;
    const speed = 1 + this.#slowdown * this.#running.length;
    const untilDone = (head.finishV - this.#v) * speed;
    const untilTimeout = head.startedAt + this.#maxMs - now;
    this.#timer = setTimeout(() => this.#tick(), Math.max(0, Math.min(untilDone, untilTimeout)));
  }

  #tick(): void {
    const now = performance.now();
    this.#advance(now);
    // Half a millisecond of slack: timers fire late, never early, by design.
    for (let head = this.#running[0]; head !== undefined; head = this.#running[0]) {
      const done = head.finishV <= this.#v + 0.5;
      const timedOut = now - head.startedAt >= this.#maxMs - 0.5;
      if (!done && !timedOut) break;
      // The clock ran at the old speed up to now; from here the others go faster.
      this.#running.shift();
      if (head.key !== undefined) {
        const left = this.#perKey.get(head.key)! - 1;
        if (left === 0) this.#perKey.delete(head.key);
        else this.#perKey.set(head.key, left);
      }
      if (!done) {
        this.errors++;
        head.reject(new Error(`simulated origin: statement timeout after ${this.#maxMs} ms`));
      } else if (head.fails) {
        this.errors++;
        head.reject(new Error("simulated origin: unavailable"));
      } else head.resolve();
    }
    this.#schedule(now);
  }
}
