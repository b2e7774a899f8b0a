/**
 * One command's life: queued, written, settled. Kept as a plain class with
 * fixed fields so the hot path allocates one object and one promise per call.
 */
import { unlistenAbort } from "./_abort.ts";
import type { Deadline, Deadlines } from "./_deadlines.ts";
import type { Arg, Reply, ReplyMap } from "./types.ts";

export const QUEUED = 0;
export const WRITTEN = 1;
export const SETTLED = 2;

export class Command implements Deadline, EventListenerObject {
  state = QUEUED;
  deadline = Infinity;
  heapIndex = -1;
  /** Its reply has been read off the connection (even if nobody was waiting any more). */
  replied = false;
  /** The heap holding this command's deadline, so settling takes it out. */
  deadlines: Deadlines<Command> | undefined = undefined;
  issuedAt = 0;
  /** Replies still expected: SUBSCRIBE a b c gets one confirmation per channel. */
  expect = 1;
  /** The caller's signal, set only while this command listens to it (it is its own listener: {@linkcode Command.handleEvent}). */
  signal: AbortSignal | undefined = undefined;
  /** Told after an abort settled this command: the client's close() may be waiting for its last command. */
  onAborted: (() => void) | undefined = undefined;
  onAttribute: ((attribute: ReplyMap) => void) | undefined = undefined;
  resolve!: (value: Reply) => void;
  reject!: (error: unknown) => void;

  constructor(readonly args: readonly Arg[], readonly buffers: boolean) {}

  /** Settle once; a reply arriving after a timeout or an abort is discarded. */
  succeed(value: Reply): void {
    if (this.state === SETTLED) return;
    this.#finish();
    this.resolve(value);
  }

  fail(error: unknown): void {
    if (this.state === SETTLED) return;
    this.#finish();
    this.reject(error);
  }

  /**
   * The signal aborted: reject with its reason. The command listens with
   * itself (an `EventListenerObject`), so a signal costs no closure per call;
   * one not yet written is then never written.
   */
  handleEvent(): void {
    this.fail(this.signal!.reason);
    this.onAborted?.();
  }

  #finish(): void {
    this.state = SETTLED;
    if (this.heapIndex >= 0) this.deadlines!.remove(this);
    if (this.signal !== undefined) unlistenAbort(this.signal, this);
  }
}

/** The command's name for messages: upper case, or "(binary)" when given as bytes. */
export function commandName(cmd: Command): string {
  const first = cmd.args[0];
  return typeof first === "string" ? first.toUpperCase() : "(binary)";
}

/** Why `command` cannot be sent (not a non-empty array of strings, finite numbers and bytes), or undefined. */
export function checkArgs(command: readonly Arg[]): TypeError | undefined {
  if (!Array.isArray(command) || command.length === 0) {
    return new TypeError("Cannot send: 'command' must be a non-empty array");
  }
  for (let i = 0; i < command.length; i++) {
    const a = command[i];
    const t = typeof a;
    if (t === "string" || a instanceof Uint8Array) continue;
    if (t === "number" && Number.isFinite(a)) continue;
    return new TypeError(
      `Cannot send: argument ${i} must be a string, finite number or Uint8Array, got ${
        a === null ? "null" : t === "number" ? String(a) : t
      }`,
    );
  }
  return undefined;
}
