/**
 * What the three adapters (ioredis, node-redis, Bun) share: argument checks
 * with our client's messages, one timer heap for `timeoutMs`, the abort
 * race, and the translation of a foreign client's reply and errors into our
 * {@linkcode Reply} and {@linkcode RedisReplyError}.
 *
 * Nothing here imports a client package: each adapter describes what it
 * calls with a structural interface of its own.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { checkSendOptions, commandName, type Deadline, Deadlines } from "../connection/mod.ts";
import { RedisReplyError, TimeoutError, timeoutMessage } from "../errors.ts";
import type { Arg, Reply, ReplyMap, SendOptions } from "../types.ts";

const utf8 = new TextDecoder();

/**
 * A number as our encoder writes it: integers with their exact digits
 * (`String(1e21)` is "1e+21", which Redis refuses as an integer), fractions
 * in JS's shortest round-trip form. The foreign clients take strings only
 * (node-redis), or write numbers with `String()` (ioredis).
 */
export function numberText(n: number): string {
  return Number.isInteger(n) && !Number.isSafeInteger(n) ? BigInt(n).toString() : String(n);
}

/**
 * An argument as the foreign clients write it: ioredis writes a Buffer byte
 * for byte but anything else with String() (a plain Uint8Array would go out
 * as "1,2,3"), node-redis takes strings and Buffers only. A Buffer over the
 * same memory costs no copy.
 */
export function bufferArgument(arg: Arg): string | Buffer {
  if (typeof arg === "string") return arg;
  if (typeof arg === "number") return numberText(arg);
  return Buffer.isBuffer(arg) ? arg : Buffer.from(arg.buffer, arg.byteOffset, arg.byteLength);
}

/** The command's name as a string (a binary name decoded as UTF-8): the foreign clients want a string. */
export function nameOf(command: readonly Arg[]): string {
  const head = command[0]!;
  return typeof head === "string" ? head : typeof head === "number" ? numberText(head) : utf8.decode(head);
}

/**
 * One command in flight under a deadline or a signal. A class rather than a
 * promise executor's closures: measured, the closures (a context, a
 * `finish`, an `expire` and an abort listener per command) made a timed
 * send about ten times as costly as an untimed one, and the cache times
 * every command it sends. It is its own abort listener (`handleEvent`).
 */
class Pending implements Deadline {
  deadline = 0;
  heapIndex = -1;
  startedAt = 0;
  /** The setting the deadline came from (`timeoutSetting`), named when it runs out. */
  setting = "timeoutMs";
  settled = false;
  resolve!: (reply: Reply) => void;
  reject!: (error: unknown) => void;
  readonly command: readonly Arg[];
  readonly signal: AbortSignal | undefined;

  constructor(command: readonly Arg[], signal: AbortSignal | undefined) {
    this.command = command;
    this.signal = signal;
  }

  /** The signal aborted. */
  handleEvent(): void {
    this.fail(this.signal!.reason);
  }

  /** The foreign client answered. */
  answer(value: unknown): void {
    if (this.settled) return;
    let reply: Reply;
    try {
      reply = toReply(value);
    } catch (error) {
      this.fail(error);
      return;
    }
    this.end();
    this.resolve(reply);
  }

  /** The client failed, the deadline passed (the heap has already dropped it) or the signal aborted. */
  fail(error: unknown): void {
    if (this.settled) return;
    this.end();
    this.reject(error);
  }

  end(): void {
    this.settled = true;
    if (this.heapIndex >= 0) deadlines.remove(this);
    this.signal?.removeEventListener("abort", this);
  }
}

// One timer for every adapter's deadlines (a timer per command is what made
// node-redis v6 several times slower than v5). It is unref'd: a deadline
// alone never keeps a process alive.
const deadlines = new Deadlines<Pending>((p) => {
  const waited = Date.now() - p.startedAt;
  const timeoutMs = p.deadline - p.startedAt;
  p.fail(
    new TimeoutError(timeoutMessage(`Command ${commandName(p.command[0])}`, p.setting, timeoutMs), waited, {
      setting: p.setting,
      timeoutMs,
    }),
  );
});

/** How many adapter commands are waiting on a deadline (their tests check none is left behind). */
export function pendingDeadlines(): number {
  return deadlines.size;
}

/**
 * Run one command through a foreign client under our `timeoutMs` and
 * `signal`: reject with `TimeoutError` once `timeoutMs` has passed since this
 * call, with `signal.reason` as soon as it aborts (a command not started when
 * the signal is already aborted is never started). The foreign command
 * itself may still run, exactly as a command of ours that was already
 * written; its late answer is dropped. The deadline leaves the heap and the
 * abort listener is removed as soon as the command settles, however it
 * settles.
 *
 * `start` issues the command. The client's server errors become
 * {@linkcode RedisReplyError}s; its other failures (a closed client, a lost
 * connection) pass through unchanged.
 */
export function run(
  command: readonly Arg[],
  options: SendOptions | undefined,
  start: () => Promise<unknown>,
): Promise<Reply> {
  if (options !== undefined) {
    const bad = checkSendOptions(options);
    if (bad !== undefined) return Promise.reject(bad);
  }
  const signal = options?.signal;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const timeoutMs = options?.timeoutMs;
  const timed = typeof timeoutMs === "number" && timeoutMs > 0;
  // Counted from the call, as our client does, not from when the foreign
  // client gets to write the command.
  const startedAt = timed ? Date.now() : 0;
  let issued: Promise<unknown>;
  try {
    issued = start();
  } catch (error) {
    // A client that throws instead of rejecting (bad arguments) still
    // answers through the promise, as every send does.
    return Promise.reject(foreignError(error));
  }
  if (!timed && signal === undefined) return issued.then(toReply, rejectForeign);
  const pending = new Pending(command, signal);
  if (options?.timeoutSetting !== undefined) pending.setting = options.timeoutSetting;
  const promise = new Promise<Reply>((resolve, reject) => {
    pending.resolve = resolve;
    pending.reject = reject;
  });
  if (timed) {
    pending.startedAt = startedAt;
    pending.deadline = startedAt + timeoutMs;
    deadlines.add(pending);
  }
  signal?.addEventListener("abort", pending, { once: true });
  issued.then((value) => pending.answer(value), (error: unknown) => pending.fail(foreignError(error)));
  return promise;
}

/** A server error of any of the three clients, going by what each one sets. */
function isForeignReplyError(error: Error): boolean {
  // Bun: RedisError with this code for `-` and `!` replies.
  if ((error as { code?: unknown }).code === "ERR_REDIS_SERVER_ERROR") return true;
  // ioredis: redis-errors' ReplyError (ioredis 6's SimpleError and BlobError
  // extend it); node-redis: ErrorReply (v5's SimpleError and BlobError extend
  // it). Neither sets a distinctive `name` on every version, so the class
  // chain is read; their other errors (closed, aborted, timed out,
  // MaxRetriesPerRequest) are not in it.
  for (
    let p: unknown = Object.getPrototypeOf(error);
    p !== null && p !== Error.prototype;
    p = Object.getPrototypeOf(p)
  ) {
    const name = (p as { constructor?: { name?: unknown } }).constructor?.name;
    if (name === "ReplyError" || name === "ErrorReply") return true;
  }
  return false;
}

function foreignError(error: unknown): unknown {
  if (!(error instanceof Error) || !isForeignReplyError(error)) return error;
  return new RedisReplyError(error.message, { cause: error });
}

function rejectForeign(error: unknown): Promise<never> {
  return Promise.reject(foreignError(error));
}

/**
 * A foreign reply as our decoder would give it: strings, numbers, bigints,
 * booleans and null as they are; bytes that own their memory (a view of a
 * larger buffer is copied); a server error inside an aggregate
 * (an EXEC reply) as a {@linkcode RedisReplyError} in place; a map (a `Map`
 * or a plain object, whatever the client made of it) as an object without a
 * prototype, so a `__proto__` key stays a key; a `Set` as an array; a
 * boxed string (ioredis 6's verbatim strings) as a string; `undefined` as
 * null. Arrays are converted in place: each is a fresh array of the client's.
 */
export function toReply(value: unknown): Reply {
  switch (typeof value) {
    case "string":
    case "number":
    case "bigint":
    case "boolean":
      return value;
    case "undefined":
      return null;
    case "object":
      break;
    default:
      throw new TypeError(`Cannot read the client's reply: unexpected ${typeof value}`);
  }
  if (value === null) return value;
  if (value instanceof Uint8Array) return owned(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = toReply(value[i]);
    return value as Reply[];
  }
  if (value instanceof Error) {
    return value instanceof RedisReplyError ? value : new RedisReplyError(value.message, { cause: value });
  }
  if (value instanceof String) return value.valueOf();
  if (value instanceof Set) return Array.from(value, toReply);
  const map: ReplyMap = Object.create(null);
  if (value instanceof Map) {
    for (const [k, v] of value) map[keyText(k)] = toReply(v);
    return map;
  }
  for (const k of Object.keys(value)) map[k] = toReply((value as Record<string, unknown>)[k]);
  return map;
}

// ioredis and node-redis hand out bulk strings as Buffers that are views of
// the socket chunk they arrived in (or of Node's shared 8 KiB pool): a
// value kept in a cache would keep that whole chunk alive. Such a view is
// copied once, as our own client copies every bulk string it returns in
// buffers mode. (The cache's own defensive copy uses `slice()`, which on a
// Buffer is a view again.)
function owned(bytes: Uint8Array): Uint8Array {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) return bytes;
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy;
}

function keyText(key: unknown): string {
  if (typeof key === "string") return key;
  if (key instanceof Uint8Array) return utf8.decode(key);
  return String(key);
}
