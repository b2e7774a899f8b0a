/**
 * Client tracking for one connection (RESP3 `CLIENT TRACKING ON`, default
 * mode): the server remembers the keys this connection reads and pushes an
 * `invalidate` frame when one changes, expires or is evicted, or a null one
 * on FLUSHALL/FLUSHDB. Pushes and replies share the connection, so they
 * arrive in the order the server produced them.
 *
 * Tracking is turned on when the first listener arrives, and on every new
 * connection before anything queued is written, so no read of a reconnected
 * client goes untracked. Listeners are reset (told to forget everything)
 * whenever tracking may have missed something: the connection closed, the
 * server refused `CLIENT TRACKING`, or the server flushed.
 *
 * @module
 */
import { replyText } from "../shared/mod.ts";
import type { Arg, Reply, TrackingListener } from "../types.ts";

function text(value: Reply): string {
  return replyText(value) ?? String(value);
}

/** The tracking state of one client. */
export class ClientTracking {
  readonly #listeners = new Set<TrackingListener>();
  /** True while the current connection has been asked to track (and has not refused). */
  #on = false;

  /** The command that turns tracking on; sent first on every connection while someone listens. */
  static readonly COMMAND: readonly Arg[] = Object.freeze(["CLIENT", "TRACKING", "ON"]);

  /** True while someone listens (a new connection must turn tracking on). */
  get wanted(): boolean {
    return this.#listeners.size > 0;
  }

  /** True while reads on the current connection are tracked. */
  get on(): boolean {
    return this.#on;
  }

  /** Add a listener; returns whether it is the first (tracking must be turned on). */
  add(listener: TrackingListener): boolean {
    this.#listeners.add(listener);
    return this.#listeners.size === 1;
  }

  /** Remove a listener; returns whether it was the last (tracking may be turned off). */
  remove(listener: TrackingListener): boolean {
    return this.#listeners.delete(listener) && this.#listeners.size === 0;
  }

  /** `CLIENT TRACKING ON` was written on the current connection: reads written after it are tracked. */
  requested(): void {
    this.#on = true;
  }

  /** The server refused `CLIENT TRACKING ON` (or it could not be sent). */
  refused(error: unknown): void {
    this.#on = false;
    this.#reset(`CLIENT TRACKING was refused (${error instanceof Error ? error.message : String(error)})`);
    for (const listener of [...this.#listeners]) listener.refused?.(error);
  }

  /** The connection closed: nothing it tracked is reported any more. */
  lost(reason: string): void {
    const was = this.#on;
    this.#on = false;
    if (was || this.wanted) this.#reset(reason);
  }

  /** Tracking was turned off on purpose (the last listener left). */
  off(): void {
    this.#on = false;
  }

  /** Handle a push frame; true when it was an invalidation (consumed here). */
  push(frame: Reply[]): boolean {
    if (frame.length !== 2 || text(frame[0]!) !== "invalidate") return false;
    const keys = frame[1];
    if (keys === null || keys === undefined) {
      // A null invalidation: FLUSHALL or FLUSHDB, every key may have changed.
      this.#reset("the server flushed its keys (FLUSHALL or FLUSHDB)");
      return true;
    }
    if (!Array.isArray(keys)) return true;
    const names = keys.map(text);
    for (const listener of this.#listeners) listener.invalidate(names);
    return true;
  }

  #reset(reason: string): void {
    for (const listener of this.#listeners) listener.reset(reason);
  }
}
