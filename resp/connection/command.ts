/**
 * One command's life: queued, written, settled. Kept as a plain class with
 * fixed fields so the hot path allocates one object and one promise per call.
 *
 * Every byte of a command in flight survives the young generation's
 * collections (scavenges), and V8 grows its young generation by the bytes
 * that survive: a command holds no more than it needs, or peak memory
 * grows with the commands in flight.
 */
import { abortSignal, knownOptions, unlistenAbort } from "../shared/mod.ts";
import type { Deadline, Deadlines } from "./deadlines.ts";
import type { Arg, Reply, SendOptions } from "../types.ts";

export const QUEUED = 0;
export const WRITTEN = 1;
export const SETTLED = 2;

/**
 * The initial `deadline` and `issuedAt` of a command with no timeout: not a
 * number, so V8 keeps those fields tagged. A field that only ever held numbers,
 * one of them not a small integer (`Infinity`, `Date.now()`), is a double
 * field: every command would then carry its own boxed number (16 bytes),
 * timed or not. Read only for timed or offline commands, which set them.
 */
const UNSET = undefined as unknown as number;

/** The arguments of a command once written: never written again (a written command is never resent). */
export const SENT: readonly Arg[] = Object.freeze([]);

export class Command implements Deadline, EventListenerObject {
  state = QUEUED;
  /** When its timeout runs out (only read once it has one). */
  deadline = UNSET;
  heapIndex = -1;
  /** Its reply has been read off the connection (even if nobody was waiting any more). */
  replied = false;
  /** The heap holding this command's deadline, so settling takes it out. */
  deadlines: Deadlines<Command> | undefined = undefined;
  /** `Date.now()` at the call, for a timed command or one issued while offline. */
  issuedAt = UNSET;
  /** Replies still expected: SUBSCRIBE a b c gets one confirmation per channel. */
  expect = 1;
  /** The caller's signal, set only while this command listens to it (it is its own listener: {@linkcode Command.handleEvent}). */
  signal: AbortSignal | undefined = undefined;
  /** Told after an abort settled this command: the client's close() may be waiting for its last command. */
  onAborted: (() => void) | undefined = undefined;
  /**
   * The caller's options, when given: read when the command times out
   * (which setting ran out) and when its reply comes (`onAttribute`).
   * One field for what few calls pass, not one per option.
   */
  options: SendOptions | undefined = undefined;
  resolve!: (value: Reply) => void;
  reject!: (error: unknown) => void;

  /**
   * Its arguments until they are written; then {@linkcode SENT}: the caller's
   * array is garbage after the write instead of surviving with the command
   * until its reply (56 to 80 bytes for a GET, SET or EVALSHA).
   */
  args: readonly Arg[];
  /** Its first argument, for messages and for matching (un)subscribe confirmations after the write. */
  readonly name: Arg | undefined;

  constructor(args: readonly Arg[], readonly buffers: boolean) {
    this.args = args;
    this.name = args[0];
  }

  /** Settle once; a reply arriving after a timeout or an abort is discarded. */
  succeed(value: Reply): void {
    if (this.state === SETTLED) return;
    this.finish();
    this.resolve(value);
  }

  fail(error: unknown): void {
    if (this.state === SETTLED) return;
    this.finish();
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

  /**
   * Mark settled and stop the timer and the signal; `succeed` and `fail` call
   * it. Not `#private`: a class with a private method stores a brand in every
   * instance.
   */
  finish(): void {
    this.state = SETTLED;
    if (this.heapIndex >= 0) this.deadlines!.remove(this);
    if (this.signal !== undefined) unlistenAbort(this.signal, this);
  }
}

/**
 * A command's name for messages and traces, from its first argument: upper
 * case, or "(binary)" when given as bytes. The one place that derives it.
 */
export function commandName(first: Arg | undefined): string {
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

/** Every key of {@linkcode SendOptions}: any other is refused, by name. */
export const SEND_OPTIONS: readonly (keyof SendOptions)[] = [
  "signal",
  "timeoutMs",
  "buffers",
  "onAttribute",
  "bytesPerMs",
  "timeoutSetting",
];

/**
 * Why `options` (given, not undefined) cannot be used, or undefined: an
 * unknown key, or a field of the wrong type. Checked on every call that
 * passes options, so it stays a loop over a handful of keys and a few
 * `typeof`s; a call without options never gets here.
 */
export function checkSendOptions(options: SendOptions): TypeError | RangeError | undefined {
  // A frozen object found good once stays good: a library that sends the
  // same options every time (the cache's command options) pays one lookup.
  if (good.has(options)) return undefined;
  const bad = checkFields(options);
  if (bad === undefined && Object.isFrozen(options)) good.add(options);
  return bad;
}

const good = new WeakSet<object>();

function checkFields(options: SendOptions): TypeError | RangeError | undefined {
  if (typeof options !== "object" || options === null) {
    return new TypeError(`Cannot send: options must be an object, got ${options === null ? "null" : typeof options}`);
  }
  try {
    knownOptions("send()", options, SEND_OPTIONS);
    if (options.signal !== undefined) abortSignal("send", "signal", options.signal);
  } catch (error) {
    return error as TypeError;
  }
  const { timeoutMs, buffers, onAttribute, bytesPerMs, timeoutSetting } = options;
  if (timeoutSetting !== undefined && typeof timeoutSetting !== "string") {
    return new TypeError(`Cannot send: 'timeoutSetting' must be a string, got ${typeof timeoutSetting}`);
  }
  if (timeoutMs !== undefined && (typeof timeoutMs !== "number" || !(timeoutMs >= 0) || timeoutMs === Infinity)) {
    return new RangeError(
      `Cannot send: 'timeoutMs' must be a non-negative finite number (0: none), got ${
        typeof timeoutMs === "number" ? timeoutMs : typeof timeoutMs
      }`,
    );
  }
  if (buffers !== undefined && typeof buffers !== "boolean") {
    return new TypeError(`Cannot send: 'buffers' must be a boolean, got ${typeof buffers}`);
  }
  if (onAttribute !== undefined && typeof onAttribute !== "function") {
    return new TypeError(`Cannot send: 'onAttribute' must be a function, got ${typeof onAttribute}`);
  }
  if (bytesPerMs !== undefined && (typeof bytesPerMs !== "number" || !(bytesPerMs > 0) || bytesPerMs === Infinity)) {
    return new RangeError(
      `Cannot send: 'bytesPerMs' must be a positive finite number, got ${
        typeof bytesPerMs === "number" ? bytesPerMs : typeof bytesPerMs
      }`,
    );
  }
  return undefined;
}
