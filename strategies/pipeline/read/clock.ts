/**
 * This client's estimate of each Redis server's clock. Envelopes carry the
 * publishing server's own `TIME`, and a reader judges them against an
 * estimate of that same server's clock: the offset between the server's
 * `TIME` and the local monotonic clock, measured over one round trip (error
 * at most half of it, which {@linkcode ServerClock.errorMs} tells) and
 * re-measured in the background: every 30 s, or soon (1 s, then backing
 * off) while the round trip was slow. The local wall
 * clock is never read, so a client whose clock is an hour off behaves the
 * same, and no two machines' clocks are ever compared (on a cluster each
 * node has its own offset).
 *
 * @module
 */
import { timeoutOptions } from "../../../resp/shared/mod.ts";
import { Script } from "../../../resp/script.ts";
import type { RedisLike, Reply } from "../../../resp/types.ts";

// Keyed so a cluster client routes it to the node that serves the key.
const TIME = new Script("return redis.call('TIME')");

// How long an estimate is used before a background re-measure starts.
const REMEASURE_MS = 30_000;
// An estimate measured over a round trip slower than this (a busy event
// loop, a cold connection) is re-measured a second later instead, then
// after twice as long each time it stays that slow (a link that is always
// slower gains nothing from re-measuring every second), up to 30 s.
const LOOSE_MS = 4;
// A re-measure over a slower round trip than this many times the best one
// keeps the older, tighter estimate (until that one is too old to trust).
const SLOWER = 2;
const TRUST_MS = 300_000;
const RETRY_MS = 1000;

/** Numbers only: an estimate may be read by caches of other requests (workerd), which must share no promise. */
interface Estimate {
  /** Server time minus local time, in ms. */
  offset: number;
  /** Round trip of the measurement, in ms: the estimate is within half of it. */
  rttMs: number;
  /** Local time of the measurement. */
  at: number;
  /** Local time the next re-measure is due. */
  due: number;
  /** How long after this one the next loose estimate is re-measured. */
  backoffMs: number;
}

/**
 * The estimates of every cache of this process (or isolate) that reads the
 * local clock through `performance.now()`, by server: a Worker builds its
 * cache per request, and its second request must not pay a TIME round trip
 * again. A cache given its own `now` keeps its own estimates.
 */
const perProcess = new Map<string, Estimate>();

/** What the clock needs of its cache. */
export interface ClockContext {
  readonly redis: RedisLike;
  /** True when `now` is the process' own `performance.now()`: estimates are then shared by the caches of this process. */
  readonly shared?: boolean;
  /** The local monotonic clock in ms (the cache's `now`). */
  readonly now: () => number;
  readonly commandTimeoutMs: number;
}

/** Estimates of the servers' clocks, one per node. */
export class ServerClock {
  readonly #cache: ClockContext;
  readonly #nodeFor: ((key: string) => string | undefined) | undefined;
  readonly #estimates: Map<string, Estimate>;
  /** This cache's background re-measures, by node: never shared with another cache. */
  readonly #measuring = new Map<string, Promise<void>>();
  /** The one server's name in the shared estimates ("" when not shared). */
  readonly #server: string;
  #single: Estimate | undefined;

  constructor(context: ClockContext) {
    this.#cache = context;
    const nodeFor = (context.redis as { nodeFor?: unknown }).nodeFor;
    this.#nodeFor = typeof nodeFor === "function" ? (key) => nodeFor.call(context.redis, key) : undefined;
    const server = (context.redis as { serverName?: unknown }).serverName;
    // Shared by server name: a cluster's node names, or a client's server.
    const shareable = context.shared === true && (this.#nodeFor !== undefined || typeof server === "string");
    this.#estimates = shareable ? perProcess : new Map();
    this.#server = shareable && this.#nodeFor === undefined ? server as string : "";
    if (this.#nodeFor === undefined) this.#single = this.#estimates.get(this.#server);
  }

  /**
   * The estimated time on the server that holds `key`, in ms; `undefined`
   * until that server's clock was measured once (await {@linkcode sync}).
   */
  at(key: string): number | undefined {
    // One server (no nodeFor): no lookup by node.
    const estimate = this.#nodeFor === undefined
      ? (this.#single ??= this.#estimates.get(this.#server))
      : this.#estimates.get(this.#node(key));
    if (estimate === undefined) return undefined;
    const local = this.#cache.now();
    // Not through a client that says it is disconnected: the TIME would
    // only wait in its queue (a get served while Redis is down ages its
    // entry here); the next read after the reconnect measures.
    if (local >= estimate.due && (this.#cache.redis as { connected?: unknown }).connected !== false) {
      const node = this.#node(key);
      if (!this.#measuring.has(node)) {
        // Other caches sharing the estimate (a Worker's per request) leave
        // this one measure rather than each start its own.
        estimate.due = local + this.#cache.commandTimeoutMs + RETRY_MS;
        // In the background: the current estimate serves meanwhile.
        this.#measuring.set(
          node,
          this.#measure(key, estimate).then(
            () => {},
            // The current estimate goes on serving; a second later a read tries again.
            () => {
              estimate.due = this.#cache.now() + RETRY_MS;
            },
          ).finally(() => this.#measuring.delete(node)),
        );
      }
    }
    return local + estimate.offset;
  }

  /**
   * How far {@linkcode at} may be off for `key`, in ms: half the round trip
   * its estimate was measured over; `undefined` until measured.
   */
  errorMs(key: string): number | undefined {
    const estimate = this.#nodeFor === undefined
      ? (this.#single ??= this.#estimates.get(this.#server))
      : this.#estimates.get(this.#node(key));
    return estimate === undefined ? undefined : estimate.rttMs / 2;
  }

  /** Whether the clock of the server that holds `key` was measured (a read may judge without waiting). */
  known(key: string): boolean {
    return this.#nodeFor === undefined
      ? (this.#single ??= this.#estimates.get(this.#server)) !== undefined
      : this.#estimates.has(this.#node(key));
  }

  /** Measure the clock of the server that holds `key`, unless it was already. */
  sync(key: string): Promise<void> {
    const node = this.#node(key);
    if (this.#estimates.has(node)) return Promise.resolve();
    // Callers of this cache racing for a first measurement share it (the
    // promise stays with this cache: another request's cache measures on
    // its own until an estimate is in).
    const pending = this.#first.get(node);
    if (pending !== undefined) return pending;
    const first = this.#measure(key, undefined).then((e) => {
      this.#estimates.set(node, e);
      if (this.#nodeFor === undefined) this.#single = e;
    }).finally(() => this.#first.delete(node));
    this.#first.set(node, first);
    return first;
  }

  readonly #first = new Map<string, Promise<void>>();

  #node(key: string): string {
    return this.#nodeFor?.(key) ?? this.#server;
  }

  async #measure(key: string, previous: Estimate | undefined): Promise<Estimate> {
    const c = this.#cache;
    const before = c.now();
    const reply = await TIME.run(c.redis, [key], [], timeoutOptions(c.commandTimeoutMs, "commandTimeoutMs"));
    const after = c.now();
    const server = serverMs(reply);
    const rttMs = Math.max(0, after - before);
    const offset = server - (before + after) / 2;
    if (previous === undefined) {
      return schedule({ offset, rttMs, at: after, due: after, backoffMs: RETRY_MS }, after, true);
    }
    const trusted = after - previous.at < TRUST_MS;
    // A loose estimate gives way only to a tighter one; a tight one to one
    // not much looser (a fresher measure, for drift).
    const looser = rttMs > Math.max(1, previous.rttMs) * (previous.rttMs > LOOSE_MS ? 1 : SLOWER);
    if (looser && trusted) {
      // A congested round trip says little: keep the tighter estimate.
      return schedule(previous, after, false);
    }
    previous.offset = offset;
    previous.rttMs = rttMs;
    previous.at = after;
    return schedule(previous, after, true);
  }
}

// When `e` is re-measured next: soon while it is loose, backing off each
// time; a tight estimate after REMEASURE_MS (half that when a congested
// measure was just set aside).
function schedule(e: Estimate, now: number, fresh: boolean): Estimate {
  if (e.rttMs > LOOSE_MS) {
    e.due = now + e.backoffMs;
    e.backoffMs = Math.min(e.backoffMs * 2, REMEASURE_MS);
  } else {
    e.due = now + (fresh ? REMEASURE_MS : REMEASURE_MS / 2);
    e.backoffMs = RETRY_MS;
  }
  return e;
}

function serverMs(reply: Reply): number {
  if (!Array.isArray(reply) || reply.length !== 2) throw new Error(`unexpected TIME reply: ${String(reply)}`);
  const seconds = Number(reply[0]);
  const micros = Number(reply[1]);
  if (!Number.isFinite(seconds) || !Number.isFinite(micros)) throw new Error("unexpected TIME reply");
  return seconds * 1000 + micros / 1000;
}
