/**
 * One command's life: queued, written, settled. Kept as a plain class with
 * fixed fields so the hot path allocates one object and one promise per call.
 */
import type { Deadline, Deadlines } from "./_deadlines.ts";
import type { Arg, Reply, ReplyMap } from "./types.ts";

export const QUEUED = 0;
export const WRITTEN = 1;
export const SETTLED = 2;

export class Command implements Deadline {
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
  signal: AbortSignal | undefined = undefined;
  onAbort: (() => void) | undefined = undefined;
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

  #finish(): void {
    this.state = SETTLED;
    if (this.heapIndex >= 0) this.deadlines!.remove(this);
    if (this.onAbort !== undefined) this.signal!.removeEventListener("abort", this.onAbort);
  }
}

/** The command's name for messages: upper case, or "(binary)" when given as bytes. */
export function commandName(cmd: Command): string {
  const first = cmd.args[0];
  return typeof first === "string" ? first.toUpperCase() : "(binary)";
}
