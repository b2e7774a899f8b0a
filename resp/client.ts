/**
 * The Redis client: one socket, automatic pipelining (every command issued in
 * the same tick leaves in one write), timeouts counted from the call, an
 * offline queue, and reconnection with capped, jittered backoff.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { Command, QUEUED, SETTLED, WRITTEN } from "./_command.ts";
import { reconnectDelay } from "./_backoff.ts";
import { Deadlines } from "./_deadlines.ts";
import { Fifo } from "./_fifo.ts";
import { describeTarget, openTransport, type Transport } from "./connection.ts";
import { Decoder } from "./decode.ts";
import { CommandWriter } from "./encode.ts";
import { ConnectionError, ProtocolError, RedisReplyError, TimeoutError } from "./errors.ts";
import { type ConnectOptions, resolveConnectOptions, type ResolvedOptions } from "./options.ts";
import type { Arg, RedisLike, Reply, ReplyMap, SendOptions } from "./types.ts";

const SUBSCRIBE_KINDS = new Set([
  "subscribe",
  "psubscribe",
  "ssubscribe",
  "unsubscribe",
  "punsubscribe",
  "sunsubscribe",
]);
const MESSAGE_KINDS = new Set(["message", "pmessage", "smessage"]);

/** Receives RESP3 push frames (pub/sub messages, client tracking invalidations). */
export type PushListener = (push: Reply[]) => void;

/**
 * Connect to Redis. Rejects when the first attempt fails (a `ConnectionError`,
 * or the server's `RedisReplyError` for a bad password); afterwards the
 * client reconnects by itself.
 *
 * @param target a `redis://`, `rediss://` or `unix://` URL, or options.
 * @example Connect, send, close
 * ```ts
 * import { connect } from "@herdless/herdless";
 * const redis = await connect(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
 * await redis.send(["SET", "greeting", "hello"]);
 * console.log(await redis.send(["GET", "greeting"])); // "hello"
 * await redis.close();
 * ```
 */
export async function connect(target?: string | ConnectOptions): Promise<RedisClient> {
  const client = new RedisClient(resolveConnectOptions(target));
  await client.ready;
  return client;
}

/** A connection to one Redis server. Create it with {@linkcode connect}. */
export class RedisClient implements RedisLike {
  readonly #o: ResolvedOptions;
  #socket: Transport | undefined;
  #connected = false;
  #closing = false;
  #closed = false;
  #unsent: Command[] = [];
  #written = new Fifo<Command>();
  #flushScheduled = false;
  #blocked = false;
  #generation = 0;
  #attempt = 0;
  #reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  #offlineSweep: ReturnType<typeof setInterval> | undefined;
  #lastError: unknown;
  #decoder: Decoder;
  #writer = new CommandWriter();
  #deadlines = new Deadlines<Command>((c) => this.#expire(c));
  #push = new Set<PushListener>();
  /** Subscribed channels per kind, keyed by text, holding the argument as given (bytes stay bytes). */
  #channels = new Map<string, Map<string, Arg>>();
  /** RESP2 only: a subscribed connection receives messages as plain arrays. */
  #subscribed2 = false;
  #writes = 0;
  #overdue: Command | undefined;
  #overdueTimer: ReturnType<typeof setTimeout> | undefined;
  #bytesIn = 0;
  #idle: (() => void) | undefined;
  #closedPromise: Promise<void> | undefined;
  /** Settles when the first connection is ready or has failed. */
  readonly ready: Promise<void>;

  /** Prefer {@linkcode connect}, which validates options and waits for the first connection. */
  constructor(options: ResolvedOptions) {
    this.#o = options;
    this.#decoder = this.#newDecoder();
    this.ready = this.#open(true);
  }

  /**
   * Incremented on every successful (re)connect. Scripts use it to know that
   * the server's script cache may have been lost.
   */
  get generation(): number {
    return this.#generation;
  }

  /** True while a socket is open and its handshake is done. */
  get connected(): boolean {
    return this.#connected;
  }

  /** Commands issued and not yet answered (queued or written). */
  get pending(): number {
    return this.#unsent.length + this.#written.length;
  }

  /** Commands issued and not yet written: waiting for the next tick, for `drain` (backpressure) or for a reconnect. */
  get queued(): number {
    return this.#unsent.length;
  }

  /** Commands whose timeout is still being watched (answered ones leave at once). */
  get watchedDeadlines(): number {
    return this.#deadlines.size;
  }

  /** Socket writes made so far; each carries every command issued in one tick. */
  get writes(): number {
    return this.#writes;
  }

  /**
   * Send one command and resolve with its reply. A server error rejects with
   * `RedisReplyError`; a timeout with `TimeoutError`; an abort with
   * `signal.reason`; a lost connection with `ConnectionError`.
   *
   * @param command the command and its arguments, e.g. `["SET", key, value, "PX", 100]`.
   * @throws {TypeError} (as a rejection) when an argument is not a string, number or Uint8Array.
   * @example
   * ```ts
   * import { connect } from "@herdless/herdless";
   * const redis = await connect(process.env.REDIS_URL);
   * const n = await redis.send(["INCR", "visits"], { timeoutMs: 500 });
   * console.log(n);
   * await redis.close();
   * ```
   */
  send(command: readonly Arg[], options?: SendOptions): Promise<Reply> {
    const bad = checkArgs(command);
    if (bad !== undefined) return Promise.reject(bad);
    if (this.#closing || this.#closed) {
      return Promise.reject(new ConnectionError("The client is closed"));
    }
    if (
      !this.#connected && this.#unsent.length >= this.#o.offlineQueue && this.#compactUnsent() >= this.#o.offlineQueue
    ) {
      return Promise.reject(
        this.#o.offlineQueue === 0
          ? new ConnectionError(`Not connected to ${describeTarget(this.#o)}`, { cause: this.#lastError })
          : new ConnectionError(`The offline queue is full (${this.#o.offlineQueue} commands)`),
      );
    }
    const signal = options?.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);

    const cmd = new Command(command, options?.buffers === true);
    const promise = new Promise<Reply>((resolve, reject) => {
      cmd.resolve = resolve;
      cmd.reject = reject;
    });
    if (options?.onAttribute !== undefined) cmd.onAttribute = options.onAttribute;
    this.#track(cmd);
    const timeoutMs = options?.timeoutMs ?? this.#o.commandTimeoutMs;
    if (timeoutMs > 0 || !this.#connected) cmd.issuedAt = Date.now();
    if (timeoutMs > 0) {
      cmd.deadline = cmd.issuedAt + timeoutMs;
      cmd.deadlines = this.#deadlines;
      this.#deadlines.add(cmd);
    }
    if (signal !== undefined) {
      cmd.signal = signal;
      cmd.onAbort = () => {
        cmd.fail(signal.reason);
        this.#maybeIdle();
      };
      signal.addEventListener("abort", cmd.onAbort, { once: true });
    }
    this.#unsent.push(cmd);
    if (this.#connected && !this.#blocked && !this.#flushScheduled) {
      this.#flushScheduled = true;
      queueMicrotask(this.#flush);
    }
    return promise;
  }

  /**
   * Listen to RESP3 push frames (needs `resp: 3`): pub/sub messages arrive
   * here, never in a command's reply slot. Returns the function that stops
   * listening.
   */
  onPush(listener: PushListener): () => void {
    this.#push.add(listener);
    return () => this.#push.delete(listener);
  }

  /** Wait for every command already issued to be answered, then close the socket. */
  close(): Promise<void> {
    if (this.#closedPromise) return this.#closedPromise;
    this.#closing = true;
    this.#closedPromise = (async () => {
      if (!this.#connected) {
        // Nothing can be answered while disconnected: waiting for a
        // reconnect that may never come would make close() hang.
        this.#shutdown(new ConnectionError(`The client was closed while disconnected from ${describeTarget(this.#o)}`));
        return;
      }
      if (!this.#closed) {
        // Settled by the last reply, by timeouts, or by #shutdown when the
        // connection drops meanwhile (or destroy() is called).
        await new Promise<void>((resolve) => {
          this.#idle = resolve;
          this.#maybeIdle();
        });
      }
      this.#shutdown(new ConnectionError("The client is closed"));
    })();
    return this.#closedPromise;
  }

  /** Close at once: every pending command rejects with `ConnectionError`. */
  destroy(): void {
    this.#closing = true;
    this.#shutdown(new ConnectionError("The client was destroyed"));
  }

  #shutdown(error: ConnectionError): void {
    this.#closed = true;
    this.#connected = false;
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = undefined;
    this.#stopOfflineSweep();
    this.#stopOverdueWatch();
    const socket = this.#socket;
    this.#socket = undefined;
    socket?.destroy();
    this.#failAll(error);
    this.#deadlines.clear();
    const idle = this.#idle;
    this.#idle = undefined;
    idle?.();
  }

  /** Drop settled commands from the unsent list and return how many live ones remain. */
  #compactUnsent(): number {
    this.#unsent = this.#unsent.filter((c) => c.state === QUEUED);
    return this.#unsent.length;
  }

  // Subscriptions are remembered so a reconnect can restore them: without
  // that, a lease waiter would silently fall back to polling forever.
  #track(cmd: Command): void {
    const first = cmd.args[0];
    // Cheap screen before lowercasing: every (un)subscribe verb is 9 to 12
    // characters long and starts with s, p or u (any case).
    if (typeof first !== "string" || first.length < 9 || first.length > 12) return;
    const c0 = first.charCodeAt(0) | 0x20;
    if (c0 !== 0x73 && c0 !== 0x70 && c0 !== 0x75) return;
    const name = first.toLowerCase();
    if (!SUBSCRIBE_KINDS.has(name)) return;
    const base = name.replace(/^un/, "");
    let set = this.#channels.get(base);
    if (set === undefined) this.#channels.set(base, set = new Map());
    // Redis confirms each channel once; an unsubscribe from everything
    // confirms each channel still subscribed (or once when there is none).
    cmd.expect = name.startsWith("un") && cmd.args.length === 1
      ? Math.max(1, set.size)
      : Math.max(1, cmd.args.length - 1);
    for (const channel of cmd.args.slice(1)) {
      const key = typeof channel === "string"
        ? channel
        : channel instanceof Uint8Array
        ? `\0bytes:${Buffer.from(channel).toString("latin1")}`
        : String(channel);
      if (name.startsWith("un")) set.delete(key);
      else set.set(key, channel);
    }
    if (name.startsWith("un") && cmd.args.length === 1) set.clear();
  }

  readonly #flush = (): void => {
    this.#flushScheduled = false;
    const socket = this.#socket;
    if (!this.#connected || socket === undefined || this.#blocked) return;
    const unsent = this.#unsent;
    if (unsent.length === 0) return;
    this.#unsent = [];
    const writer = this.#writer;
    const written = this.#written;
    for (let i = 0; i < unsent.length; i++) {
      const cmd = unsent[i]!;
      // A command that timed out or was aborted before its write is never written.
      if (cmd.state !== QUEUED) continue;
      writer.push(cmd.args);
      cmd.state = WRITTEN;
      if (written.length === 0) this.#decoder.buffers = cmd.buffers;
      written.push(cmd);
    }
    if (writer.length === 0) {
      this.#maybeIdle();
      return;
    }
    this.#writes++;
    if (!socket.write(writer.take())) this.#blocked = true;
  };

  #expire(cmd: Command): void {
    if (cmd.state === SETTLED) return;
    const written = cmd.state === WRITTEN;
    const waited = Date.now() - cmd.issuedAt;
    cmd.fail(new TimeoutError(`Command ${commandName(cmd)} timed out after ${waited} ms`, waited));
    if (written) this.#watchOverdue(cmd);
    this.#maybeIdle();
  }

  // A reply nobody waits for still has to be read to keep replies in order,
  // but a server streaming a reply that never ends (an endless aggregate)
  // would hold the connection and grow the decoder forever. If bytes keep
  // arriving and the timed-out command's reply is still incomplete its own
  // timeout again later (at least 1 s), the connection is reset. A silent
  // server (paused, busy) costs no memory and may still answer the commands
  // queued behind: it is left alone and checked again.
  #watchOverdue(cmd: Command): void {
    if (this.#overdue !== undefined) return;
    const socket = this.#socket;
    this.#overdue = cmd;
    const graceMs = Math.max(1000, cmd.deadline - cmd.issuedAt);
    const bytesAtStart = this.#bytesIn;
    this.#overdueTimer = setTimeout(() => {
      this.#overdue = undefined;
      this.#overdueTimer = undefined;
      if (this.#socket !== socket || socket === undefined) return;
      if (cmd.replied) {
        const head = this.#written.peek();
        if (head !== undefined && head.state === SETTLED) this.#watchOverdue(head);
        return;
      }
      // Bytes for the replies ahead of it (a large one still arriving) are
      // no sign of trouble: only a reply at the head that keeps growing is.
      if (this.#bytesIn === bytesAtStart || this.#written.peek() !== cmd) {
        this.#watchOverdue(cmd);
        return;
      }
      socket.destroy(
        new ConnectionError(
          `Reset the connection: the reply to ${commandName(cmd)} is still incomplete ${graceMs} ms after it timed out`,
        ),
      );
    }, graceMs);
    this.#overdueTimer.unref?.();
  }

  #stopOverdueWatch(): void {
    clearTimeout(this.#overdueTimer);
    this.#overdueTimer = undefined;
    this.#overdue = undefined;
  }

  #newDecoder(): Decoder {
    return new Decoder({
      reply: (value, attribute) => this.#onReply(value, attribute),
      push: (value) => this.#onPush(value),
    });
  }

  #onReply(value: Reply, attribute: ReplyMap | undefined): void {
    // RESP2 pub/sub: a subscribed connection receives messages as ordinary
    // arrays, interleaved with the replies to (un)subscribe commands; they
    // must never be matched to the command at the head of the queue.
    if (this.#subscribed2 && Array.isArray(value) && typeof value[0] === "string" && MESSAGE_KINDS.has(value[0])) {
      this.#onPush(value);
      return;
    }
    const cmd = this.#written.peek();
    if (cmd === undefined) throw new ProtocolError("Reply received with no command waiting for it", -1);
    // RESP2 (un)subscribe confirmations carry the count of subscriptions
    // left: the connection is in subscribed mode exactly while it is above 0,
    // as Redis itself sees it (not as of when the command was sent).
    if (
      this.#o.resp === 2 && Array.isArray(value) && typeof value[2] === "number" && typeof value[0] === "string" &&
      SUBSCRIBE_KINDS.has(value[0])
    ) {
      this.#subscribed2 = value[2] > 0;
    }
    if (cmd.expect > 1 && Array.isArray(value)) {
      cmd.expect--;
      return;
    }
    this.#written.shift();
    cmd.replied = true;
    this.#decoder.buffers = this.#written.peek()?.buffers ?? false;
    if (attribute !== undefined && cmd.onAttribute !== undefined && cmd.state !== SETTLED) cmd.onAttribute(attribute);
    if (value instanceof RedisReplyError) cmd.fail(value);
    else cmd.succeed(value);
    if (this.#idle !== undefined) this.#maybeIdle();
  }

  #onPush(value: Reply[]): void {
    const kind = typeof value[0] === "string" ? value[0] : "";
    if (SUBSCRIBE_KINDS.has(kind)) {
      // RESP3 answers SUBSCRIBE with push frames, one per channel, instead of a reply.
      const cmd = this.#written.peek();
      if (cmd !== undefined && typeof cmd.args[0] === "string" && cmd.args[0].toLowerCase() === kind) {
        if (--cmd.expect === 0) {
          cmd.expect = 1;
          this.#onReply(value, undefined);
        }
      }
      return;
    }
    for (const listener of this.#push) listener(value);
  }

  #maybeIdle(): void {
    if (this.#idle === undefined) return;
    if (this.#unsent.some((c) => c.state !== SETTLED)) return;
    for (let i = 0; i < this.#written.length; i++) if (this.#written.at(i)!.state !== SETTLED) return;
    const idle = this.#idle;
    this.#idle = undefined;
    idle();
  }

  #failAll(error: unknown): void {
    const written = this.#written;
    this.#written = new Fifo();
    for (let cmd = written.shift(); cmd !== undefined; cmd = written.shift()) cmd.fail(error);
    const unsent = this.#unsent;
    this.#unsent = [];
    for (const cmd of unsent) cmd.fail(error);
  }

  async #open(first: boolean): Promise<void> {
    let socket: Transport | undefined;
    let transport: Transport;
    try {
      transport = await openTransport(this.#o, {
        data: (chunk) => {
          this.#bytesIn += chunk.length;
          try {
            this.#decoder.feed(chunk);
          } catch (error) {
            socket?.destroy(error as Error);
          }
        },
        drain: () => {
          this.#blocked = false;
          this.#flush();
        },
        close: (error) => {
          if (error !== undefined) this.#lastError = error;
          if (socket !== undefined) this.#onClose(socket);
        },
      });
    } catch (error) {
      this.#lastError = error;
      if (first) {
        this.#shutdown(error as ConnectionError);
        throw error;
      }
      this.#scheduleReconnect();
      return;
    }
    socket = transport;
    if (this.#closed) {
      socket.destroy();
      return;
    }
    this.#socket = socket;
    this.#decoder = this.#newDecoder();
    try {
      await this.#handshake(socket);
    } catch (cause) {
      // A refused AUTH or SELECT is the server's word and stays a RedisReplyError.
      const error = cause instanceof RedisReplyError ? cause : new ConnectionError(
        `Cannot connect to ${describeTarget(this.#o)}: the handshake failed (${(cause as Error).message})`,
        { cause },
      );
      this.#lastError = error;
      socket.destroy();
      if (first) {
        this.#shutdown(new ConnectionError("The handshake failed", { cause: error }));
        throw error;
      }
      return;
    }
    if (this.#socket !== socket) return;
    this.#connected = true;
    this.#attempt = 0;
    this.#generation++;
    this.#stopOfflineSweep();
    this.#flush();
  }

  async #handshake(socket: Transport): Promise<void> {
    const o = this.#o;
    const steps: Arg[][] = [];
    if (o.resp === 3) {
      const hello: Arg[] = ["HELLO", 3];
      if (o.password !== undefined) hello.push("AUTH", o.username ?? "default", o.password);
      if (o.name !== undefined) hello.push("SETNAME", o.name);
      steps.push(hello);
    } else {
      if (o.password !== undefined) {
        steps.push(o.username === undefined ? ["AUTH", o.password] : ["AUTH", o.username, o.password]);
      }
      if (o.name !== undefined) steps.push(["CLIENT", "SETNAME", o.name]);
    }
    if (o.db !== 0) steps.push(["SELECT", o.db]);
    for (const [kind, set] of this.#channels) if (set.size > 0) steps.push([kind.toUpperCase(), ...set.values()]);
    if (steps.length === 0) return;
    const replies = steps.map((args) => {
      const cmd = new Command(args, false);
      const p = new Promise<Reply>((resolve, reject) => {
        cmd.resolve = resolve;
        cmd.reject = reject;
      });
      if (typeof args[0] === "string" && SUBSCRIBE_KINDS.has(args[0].toLowerCase())) cmd.expect = args.length - 1;
      cmd.state = WRITTEN;
      this.#written.push(cmd);
      this.#writer.push(args);
      return p;
    });
    socket.write(this.#writer.take());
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new TimeoutError(`handshake timed out after ${o.connectTimeoutMs} ms`, o.connectTimeoutMs));
      }, o.connectTimeoutMs);
    });
    try {
      await Promise.race([Promise.all(replies), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  #onClose(socket: Transport): void {
    if (this.#socket !== socket) return;
    this.#socket = undefined;
    this.#stopOverdueWatch();
    this.#connected = false;
    this.#blocked = false;
    const cause = this.#lastError;
    const target = describeTarget(this.#o);
    // Written commands may or may not have run: reject them, never resend
    // (a resent SET NX can look like a lost lease).
    const written = this.#written;
    this.#written = new Fifo();
    // A stream the decoder refused is reported as such; anything else is a lost connection.
    const lost = cause instanceof ProtocolError
      ? cause
      : new ConnectionError(`Connection to ${target} lost before the reply arrived`, { cause });
    for (let cmd = written.shift(); cmd !== undefined; cmd = written.shift()) cmd.fail(lost);
    if (this.#closed) return;
    if (this.#o.reconnect === false || this.#closing) {
      this.#shutdown(new ConnectionError(`Connection to ${target} closed`, { cause }));
      return;
    }
    if (this.#o.offlineQueue === 0) {
      const unsent = this.#unsent;
      this.#unsent = [];
      for (const cmd of unsent) cmd.fail(new ConnectionError(`Not connected to ${target}`, { cause }));
    }
    this.#startOfflineSweep();
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#o.reconnect === false) return;
    const delay = reconnectDelay(this.#attempt++, this.#o.reconnect, Math.random);
    this.#startOfflineSweep();
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      void this.#open(false);
    }, delay);
  }

  #startOfflineSweep(): void {
    const limit = this.#o.offlineTimeoutMs;
    if (limit === 0 || this.#offlineSweep !== undefined) return;
    this.#offlineSweep = setInterval(() => {
      const now = Date.now();
      const keep: Command[] = [];
      for (const cmd of this.#unsent) {
        if (cmd.state !== QUEUED) continue;
        if (now - cmd.issuedAt >= limit) {
          cmd.fail(
            new ConnectionError(`Not connected to ${describeTarget(this.#o)} for ${limit} ms (offlineTimeoutMs)`, {
              cause: this.#lastError,
            }),
          );
        } else keep.push(cmd);
      }
      this.#unsent = keep;
      this.#maybeIdle();
    }, Math.min(limit, 100));
    this.#offlineSweep.unref?.();
  }

  #stopOfflineSweep(): void {
    clearInterval(this.#offlineSweep);
    this.#offlineSweep = undefined;
  }
}

function checkArgs(command: readonly Arg[]): TypeError | undefined {
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

function commandName(cmd: Command): string {
  const first = cmd.args[0];
  return typeof first === "string" ? first.toUpperCase() : "(binary)";
}
