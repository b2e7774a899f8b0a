/**
 * The Redis client: `connect()` and {@linkcode RedisClient}. A command is
 * validated and timed here, then written on the current connection
 * (`connection/connection.ts`: one socket, where replies are matched to commands) or,
 * while there is none, held in the offline queue. A lost connection is
 * replaced with capped, jittered backoff; each new one runs the handshake
 * (`connection/handshake.ts`) before anything queued is written.
 *
 * Past the ~350 lines a file should keep to, on purpose: about a third is
 * the public API's JSDoc and examples, and the ~400 lines of code are what
 * stays once the socket, the handshake, the subscriptions and the trace
 * channels have their own files: the public API, the offline queue and its
 * sweep, reconnects and the connection events that report them. They share
 * one lifecycle's state (connected, closing, the current connection, the
 * last error); split further, each part would reach into the others.
 *
 * @module
 */
import { commandChannel, func, ignore, listenAbort, traced } from "./shared/mod.ts";
import {
  checkArgs,
  checkSendOptions,
  ClientTracking,
  Command,
  commandName,
  Connection,
  type ConnectionHooks,
  Deadlines,
  exposeDeadlines,
  handshake,
  type HandshakeOutcome,
  QUEUED,
  reconnectDelay,
  SETTLED,
  Subscriptions,
  WRITTEN,
} from "./connection/mod.ts";
import { ConnectionError, ProtocolError, type RedisReplyError, TimeoutError, timeoutMessage } from "./errors.ts";
import { type ConnectOptions, resolveConnectOptions, type ResolvedOptions } from "./options.ts";
import { describeTarget, serverName } from "./transport/mod.ts";
import type {
  Arg,
  CommandTraceContext,
  ConnectionEvent,
  RedisLike,
  Reply,
  SendOptions,
  TrackingClient,
  TrackingListener,
} from "./types.ts";

// Set by RedisClient's static block: module-private doors into the class for the Sentinel client.
let reroute: (client: RedisClient, reason: Error) => void;
let currentServer: (client: RedisClient) => string;

/**
 * Receives push frames: RESP3 pushes (pub/sub messages, client tracking
 * invalidations) and RESP2 pub/sub messages, e.g. `["message", channel, payload]`.
 */
export type PushListener = (push: Reply[]) => void;

/**
 * Connect to Redis. Rejects with a `ConnectionError` when the first attempt
 * fails (nothing listens, a timeout, or the server refused the password or
 * the database, or needs a password and none was given: then the message
 * names the URL with the password hidden and the server's `RedisReplyError`
 * is the `cause`); afterwards the client reconnects by itself. Speaks RESP3
 * unless `resp` says otherwise, and RESP2 where the server refuses `HELLO 3`
 * (a `resp-fallback` event says so; RESP2 by default on workerd).
 *
 * @param target a `redis://`, `rediss://` or `unix://` URL, or options; `redis://127.0.0.1:6379` when omitted.
 * @returns the client, connected and past its handshake.
 * @throws {RangeError | TypeError} naming a bad setting, or an unknown option (`Unknown option 'comandTimeoutMs'
 *   for connect(); did you mean 'commandTimeoutMs'?`).
 * @throws {ConnectionError} (as a rejection) when the first connection attempt fails or the server refuses the handshake (a wrong password, a db out of range).
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

/**
 * A connection to one Redis server. Create it with {@linkcode connect}.
 *
 * Every command issued in the same tick leaves in one socket write; replies
 * come back in order. A command's timeout counts from the call. When the
 * connection drops, commands already written reject with `ConnectionError`
 * (never sent twice), later ones wait in the offline queue while the client
 * reconnects with capped, jittered backoff.
 *
 * @example Pipelining and a timeout
 * ```ts
 * import { connect } from "@herdless/herdless";
 * const redis = await connect({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", commandTimeoutMs: 1000 });
 * // Three commands, one socket write.
 * const [, , value] = await Promise.all([
 *   redis.send(["SET", "k", "v"]),
 *   redis.send(["EXPIRE", "k", 60]),
 *   redis.send(["GET", "k"]),
 * ]);
 * console.log(value, redis.writes); // "v" 1
 * // A timeout counts from the call; a reply that comes later is read and dropped, the connection stays.
 * console.log(await redis.send(["GET", "k"], { timeoutMs: 500 })); // "v"
 * await redis.close();
 * ```
 */
export class RedisClient implements RedisLike, TrackingClient {
  readonly #o: ResolvedOptions;
  /** The socket in use, from its opening (handshake included) to its close. */
  #conn: Connection | undefined;
  /** True once `#conn`'s handshake is done: commands go to it, not to the offline queue. */
  #connected = false;
  #closing = false;
  #closed = false;
  /** `lazyConnect` and no command sent yet: the first one opens the socket. */
  #lazy: boolean;
  /** Commands issued while there is no connection ready, oldest first. */
  #offline: Command[] = [];
  #generation = 0;
  #attempt = 0;
  #reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  #offlineSweep: ReturnType<typeof setInterval> | undefined;
  #lastError: unknown;
  /** `host:port` or the socket path, for traces; built on the first traced command. */
  #server: string | undefined;
  /** Writes made by the connections before the current one. */
  #pastWrites = 0;
  // One heap for the client, not one per socket: a timeout counts from the
  // call, across the offline queue and a reconnect.
  #deadlines = new Deadlines<Command>((c) => this.#expire(c));
  #push = new Set<PushListener>();
  #subscriptions = new Subscriptions();
  #tracking = new ClientTracking();
  readonly #hooks: ConnectionHooks;
  #idle: (() => void) | undefined;
  readonly #checkIdle = (): void => this.#maybeIdle();
  #closedPromise: Promise<void> | undefined;
  readonly #listeners = new Set<(event: ConnectionEvent) => void>();
  /** Settles when the first connection is ready or has failed. */
  readonly ready: Promise<void>;

  static {
    exposeDeadlines((client) => (client as RedisClient).#deadlines.size);
    reroute = (client, reason) => client.#reroute(reason);
    currentServer = (client) => client.#serverName;
  }

  /**
   * Start connecting. Prefer {@linkcode connect}, which validates options and waits for the first connection.
   *
   * @param options options already resolved and checked (`resolveConnectOptions`).
   */
  constructor(options: ResolvedOptions) {
    this.#o = options;
    if (options.onEvent !== undefined) this.#listeners.add(options.onEvent);
    this.#hooks = {
      push: (value) => {
        if (this.#tracking.push(value)) return;
        for (const listener of this.#push) listener(value);
      },
      closed: (conn, error) => this.#onClose(conn, error),
    };
    this.#lazy = options.lazyConnect;
    this.ready = this.#lazy ? Promise.resolve() : this.#open(true);
  }

  /**
   * Incremented on every successful (re)connect. Scripts use it to know that
   * the server's script cache may have been lost.
   */
  get generation(): number {
    return this.#generation;
  }

  /**
   * The protocol this client speaks: 2, or 3 (push frames, client tracking).
   * 2 once the server refused `HELLO 3` to a client not given `resp` (a
   * lazy client says 3 until its first connection tells).
   */
  get resp(): 2 | 3 {
    return this.#o.resp;
  }

  /** True while reads are tracked by the server (`track()` called, connected, not refused). */
  get tracking(): boolean {
    return this.#connected && this.#tracking.on;
  }

  /**
   * Turn on the server's client tracking (`CLIENT TRACKING ON`, default mode)
   * for this connection and every reconnect, and report to `listener` the
   * keys the server invalidates; `reset` is called whenever something may
   * have been missed (a flush, a lost connection, tracking refused). Resolves
   * the function that stops listening (the last one to stop turns tracking
   * off) once tracking is on, or once a connection is back.
   *
   * @param listener what hears invalidations and resets.
   * @throws {TypeError} (as a rejection) on a RESP2 connection: invalidations arrive as push frames.
   * @example Hear what the server invalidates
   * ```ts
   * import { connect } from "@herdless/herdless";
   * const redis = await connect({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", resp: 3 });
   * const stop = await redis.track({ invalidate: (keys) => console.log("changed:", keys), reset: () => {} });
   * await redis.send(["GET", "tracked"]); // the server remembers this read
   * await redis.send(["SET", "tracked", "1"]); // "changed: [ 'tracked' ]"
   * stop();
   * await redis.close();
   * ```
   */
  async track(listener: TrackingListener): Promise<() => Promise<void>> {
    if (this.#o.resp !== 3) {
      throw new TypeError("Cannot track: client tracking needs a RESP3 connection (connect({ resp: 3 }))");
    }
    if (this.#closing || this.#closed) throw new ConnectionError("The client is closed");
    const first = this.#tracking.add(listener);
    // Settles once the OFF is answered (or at once when none is sent): a
    // cache's close() waits for it, so no command of its own is left behind.
    const stop = (): Promise<void> => {
      if (!this.#tracking.remove(listener)) return Promise.resolve();
      this.#tracking.off();
      if (!this.#connected) return Promise.resolve();
      return this.send(["CLIENT", "TRACKING", "OFF"]).then(ignore, ignore);
    };
    if (first && this.#connected) {
      // Reads sent after this command are tracked: it goes first, in order.
      this.#tracking.requested();
      try {
        await this.send(ClientTracking.COMMAND);
      } catch (error) {
        this.#tracking.refused(error);
        this.#tracking.remove(listener);
        throw error;
      }
    }
    return stop;
  }

  /** True while a socket is open and its handshake is done. */
  get connected(): boolean {
    return this.#connected;
  }

  /** Commands issued and not yet answered (queued or written). */
  get pending(): number {
    return this.#offline.length + (this.#conn?.pending ?? 0);
  }

  /** Commands issued and not yet written: waiting for the next tick, for `drain` (backpressure) or for a reconnect. */
  get queued(): number {
    return this.#offline.length + (this.#conn?.queued ?? 0);
  }

  /** Socket writes made so far; each carries every command issued in one tick. */
  get writes(): number {
    return this.#pastWrites + (this.#conn?.writes ?? 0);
  }

  /**
   * Send one command and resolve with its reply. A server error rejects with
   * `RedisReplyError`; a timeout with `TimeoutError`; an abort with
   * `signal.reason`; a lost connection with `ConnectionError`.
   *
   * @param command the command and its arguments, e.g. `["SET", key, value, "PX", 100]`.
   * @param options a timeout, an abort signal, bytes instead of strings, a RESP3 attribute listener.
   * @returns the decoded reply.
   * @throws {TypeError} (as a rejection) when an argument is not a string, number or Uint8Array, or `options`
   *   holds a key `SendOptions` does not name, or a field of the wrong type (`signal` not an AbortSignal).
   * @throws {RedisReplyError} (as a rejection) when the server answers with an error.
   * @throws {TimeoutError} (as a rejection) when `timeoutMs` (or the client's `commandTimeoutMs`) runs out.
   * @throws {ConnectionError} (as a rejection) when the client is closed, the connection drops after the write, or the offline queue is full.
   * @example Increment with a deadline
   * ```ts
   * import { connect } from "@herdless/herdless";
   * const redis = await connect(process.env.REDIS_URL);
   * const n = await redis.send(["INCR", "visits"], { timeoutMs: 500 });
   * console.log(n);
   * await redis.close();
   * ```
   */
  send(command: readonly Arg[], options?: SendOptions): Promise<Reply> {
    // Three property reads when nobody traces; the context is built only for a subscriber.
    if (traced(commandChannel)) return this.#traceSend(command, options);
    return this.#send(command, options);
  }

  #traceSend(command: readonly Arg[], options: SendOptions | undefined): Promise<Reply> {
    const first = Array.isArray(command) ? command[0] : undefined;
    const context: CommandTraceContext = {
      command: commandName(first),
      server: this.#serverName,
    };
    return commandChannel.tracePromise(() => this.#send(command, options), context);
  }

  #send(command: readonly Arg[], options: SendOptions | undefined): Promise<Reply> {
    // The common call (connected, no options, no default timeout) in a
    // function small enough that JSC optimizes it early and cheaply: it
    // scales a function's tier-up threshold and compile time with its size,
    // and under Bun the full path below reached its optimizing compile only
    // after ~12,000 calls, costing ~15-35 ms of CPU then (Bun 1.4.5). Same
    // checks in the same order as the full path, which handles the rest.
    if (options !== undefined || !this.#connected || this.#closing || this.#closed || this.#o.commandTimeoutMs > 0) {
      return this.#sendFull(command, options);
    }
    const bad = checkArgs(command);
    if (bad !== undefined) return Promise.reject(bad);
    const cmd = new Command(command, false);
    const promise = new Promise<Reply>((resolve, reject) => {
      cmd.resolve = resolve;
      cmd.reject = reject;
    });
    cmd.expect = this.#subscriptions.track(command);
    this.#conn!.send(cmd);
    return promise;
  }

  #sendFull(command: readonly Arg[], options: SendOptions | undefined): Promise<Reply> {
    const bad = checkArgs(command) ?? (options === undefined ? undefined : checkSendOptions(options));
    if (bad !== undefined) return Promise.reject(bad);
    if (this.#closing || this.#closed) {
      return Promise.reject(new ConnectionError("The client is closed"));
    }
    if (this.#lazy) {
      // The first command of a lazy client opens the socket; it and those
      // issued until the socket is open leave with the handshake.
      this.#lazy = false;
      void this.#open(false, true);
    } else if (
      !this.#connected && this.#offline.length >= this.#o.offlineQueue && this.#compactOffline() >= this.#o.offlineQueue
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
    cmd.options = options;
    cmd.expect = this.#subscriptions.track(command);
    const timeoutMs = options?.timeoutMs ?? this.#o.commandTimeoutMs;
    if (timeoutMs > 0 || !this.#connected) cmd.issuedAt = Date.now();
    if (timeoutMs > 0) {
      cmd.deadline = cmd.issuedAt + timeoutMs;
      cmd.deadlines = this.#deadlines;
      this.#deadlines.add(cmd);
    }
    if (listenAbort(signal, cmd)) {
      cmd.signal = signal;
      cmd.onAborted = this.#checkIdle;
    }
    if (this.#connected) this.#conn!.send(cmd);
    else this.#offline.push(cmd);
    return promise;
  }

  /**
   * Open a sibling: a new client to the same server with this client's own
   * options (address, credentials, db, TLS, protocol, timeouts, name), its
   * own socket and queue, and none of this client's listeners. For a
   * connection that must not share this one's fate or mode, such as a pub/sub
   * subscriber beside a command connection.
   *
   * @returns the sibling, connected and past its handshake.
   * @throws {ConnectionError} (as a rejection) when this client is closed, or the sibling's first connection fails.
   * @example A subscriber beside the command connection
   * ```ts
   * import { connect } from "@herdless/herdless";
   * const redis = await connect(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
   * const subscriber = await redis.duplicate();
   * await subscriber.send(["SUBSCRIBE", "news"]);
   * console.log(await redis.send(["PING"])); // "PONG": the command connection never entered pub/sub
   * await Promise.all([subscriber.close(), redis.close()]);
   * ```
   */
  async duplicate(): Promise<RedisClient> {
    if (this.#closing || this.#closed) throw new ConnectionError("Cannot duplicate: the client is closed");
    const sibling = new RedisClient({ ...this.#o, onEvent: undefined });
    await sibling.ready;
    return sibling;
  }

  /**
   * Listen to push frames: pub/sub messages (RESP2 or RESP3) and, with
   * `resp: 3`, every other push (client tracking invalidations). They arrive
   * here, never in a command's reply slot.
   *
   * @param listener called with each push frame, in order.
   * @returns the function that stops listening.
   * @example Receive one message
   * ```ts
   * import { connect, type Reply } from "@herdless/herdless";
   * const sub = await connect({ resp: 3 });
   * const pub = await connect();
   * const message = new Promise<Reply[]>((resolve) => {
   *   const stop = sub.onPush((push) => {
   *     stop();
   *     resolve(push);
   *   });
   * });
   * await sub.send(["SUBSCRIBE", "news"]);
   * await pub.send(["PUBLISH", "news", "hello"]);
   * console.log(await message); // ["message", "news", "hello"]
   * await Promise.all([sub.close(), pub.close()]);
   * ```
   */
  onPush(listener: PushListener): () => void {
    this.#push.add(listener);
    return () => this.#push.delete(listener);
  }

  /**
   * Hear the connection's state from now on: `connect` (socket open),
   * `ready` (handshake done), `disconnect` (with the cause), `reconnecting`
   * (with the attempt number and the delay), `error` (an attempt failed, and
   * why). To hear the first attempt too, pass `onEvent` to `connect()`.
   *
   * @param listener called with each event; a throw is ignored (it must not break the client).
   * @returns the function that stops listening.
   * @example Log the connection's state
   * ```ts
   * import { connect } from "@herdless/herdless";
   * const redis = await connect({
   *   url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
   *   onEvent: (event) => console.log(event.type, event.server), // "connect" then "ready"
   * });
   * const stop = redis.onEvent((event) => {
   *   if (event.type === "disconnect") console.warn("Redis lost:", event.cause);
   *   if (event.type === "reconnecting") console.warn(`reconnect attempt ${event.attempt} in ${event.delayMs} ms`);
   * });
   * stop();
   * await redis.close();
   * ```
   */
  onEvent(listener: (event: ConnectionEvent) => void): () => void {
    func("listen", "listener", listener);
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(event: ConnectionEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A logging hook must not break reconnects.
      }
    }
  }

  /** `host:port` or the socket path, as events name the server. */
  /**
   * The server as traces and events name it: `host:port` (IPv6 bracketed),
   * or the unix socket path. What the process keeps per server (the
   * server's clock estimate, the scripts it was sent) is keyed by it, so
   * a client opened per request (a Cloudflare Worker) starts warm.
   *
   * @example Name the server
   * ```ts
   * import { connect } from "@herdless/herdless";
   * const redis = await connect({ host: "127.0.0.1", port: 6390, lazyConnect: true });
   * console.log(redis.serverName); // "127.0.0.1:6390"
   * await redis.close();
   * ```
   */
  get serverName(): string {
    return this.#serverName;
  }

  get #serverName(): string {
    return (this.#server ??= serverName(this.#o));
  }

  /**
   * Wait for every command already issued to be answered (or to time out),
   * then close the socket. Commands issued after this call reject with
   * `ConnectionError`; while disconnected, what is queued rejects at once.
   *
   * @returns a promise that settles once every command sent has settled and the socket was ended (the runtime
   *   releases its handle a moment later); the same one on every call.
   */
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
          this.#conn!.onSettle = this.#checkIdle;
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
    this.#tracking.lost("the client was closed");
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = undefined;
    this.#stopOfflineSweep();
    const conn = this.#conn;
    this.#conn = undefined;
    if (conn !== undefined) {
      this.#pastWrites += conn.writes;
      conn.destroy();
      conn.rejectAll(error);
    }
    const offline = this.#offline;
    this.#offline = [];
    for (const cmd of offline) cmd.fail(error);
    this.#deadlines.clear();
    const idle = this.#idle;
    this.#idle = undefined;
    idle?.();
  }

  /** Drop settled commands from the offline queue and return how many live ones remain. */
  #compactOffline(): number {
    this.#offline = this.#offline.filter((c) => c.state === QUEUED);
    return this.#offline.length;
  }

  #expire(cmd: Command): void {
    if (cmd.state === SETTLED) return;
    const written = cmd.state === WRITTEN;
    const waited = Date.now() - cmd.issuedAt;
    // Never written because there is no connection: say so, and why the last attempt failed.
    const offline = !written && !this.#connected;
    const last = offline ? this.#lastError : undefined;
    const why = offline ? `: not connected to ${describeTarget(this.#o)}${lastErrorText(last)}` : "";
    const own = cmd.options?.timeoutMs;
    const setting = own === undefined ? "commandTimeoutMs" : cmd.options?.timeoutSetting ?? "timeoutMs";
    const timeoutMs = own ?? this.#o.commandTimeoutMs;
    cmd.fail(
      new TimeoutError(`${timeoutMessage(`Command ${commandName(cmd.name)}`, setting, timeoutMs)}${why}`, waited, {
        setting,
        timeoutMs,
        ...(last === undefined ? {} : { cause: last }),
      }),
    );
    // A written command is always on the current connection: a close rejects them all.
    if (written) this.#conn?.watchOverdue(cmd);
    this.#maybeIdle();
  }

  #maybeIdle(): void {
    if (this.#idle === undefined) return;
    for (const cmd of this.#offline) if (cmd.state !== SETTLED) return;
    if (this.#conn !== undefined && !this.#conn.idle) return;
    const idle = this.#idle;
    this.#idle = undefined;
    idle();
  }

  /**
   * Open a connection and run its handshake. `first`: the one `connect()`
   * waits for (a failure closes the client); `lazy`: the first of a
   * `lazyConnect` client, whose queued commands leave with the handshake and
   * fail with its error.
   */
  async #open(first: boolean, lazy = false): Promise<void> {
    let conn: Connection;
    try {
      if (this.#o.locate !== undefined) {
        const { host, port } = await this.#o.locate();
        if (host !== this.#o.host || port !== this.#o.port) {
          this.#o.host = host;
          this.#o.port = port;
          this.#server = undefined;
        }
      }
      conn = await Connection.open(this.#o, this.#hooks);
    } catch (error) {
      this.#lastError = error;
      this.#emit({ type: "error", server: this.#serverName, error });
      if (first) {
        this.#shutdown(error as ConnectionError);
        throw error;
      }
      if (lazy) this.#failOffline(error);
      this.#scheduleReconnect();
      return;
    }
    if (this.#closed) {
      conn.destroy();
      return;
    }
    this.#conn = conn;
    this.#emit({ type: "connect", server: this.#serverName });
    // Lazy: tracking and the commands issued so far go in the handshake's write.
    const along: Command[] = [];
    if (lazy && !this.#closed) {
      if (this.#tracking.wanted && this.#o.resp === 3) along.push(this.#trackingCommand(conn));
      for (const cmd of this.#offline) if (cmd.state === QUEUED) along.push(cmd);
      this.#offline = [];
    }
    let outcome: HandshakeOutcome;
    try {
      outcome = await handshake(conn, this.#o, this.#subscriptions, along);
    } catch (error) {
      // A ConnectionError naming the URL (password hidden), the server's refusal as its cause.
      this.#lastError = error;
      this.#emit({ type: "error", server: this.#serverName, error });
      // A refusal leaves the socket open: the loss is handled here, not by
      // #onClose (unless the socket closing is what failed the handshake).
      const mine = this.#conn === conn;
      if (mine) this.#conn = undefined;
      // The commands that left with the refused handshake fail with its error.
      for (const cmd of along) cmd.fail(error);
      conn.destroy();
      if (first) {
        this.#shutdown(error as ConnectionError);
        throw error;
      }
      if (mine) this.#scheduleReconnect();
      return;
    }
    if (this.#conn !== conn) return;
    this.#connected = true;
    this.#attempt = 0;
    this.#generation++;
    if (outcome.helloRefused !== undefined) this.#fellBack(outcome.helloRefused);
    if (outcome.nameRefused !== undefined) {
      this.#emit({ type: "name-refused", server: this.#serverName, name: this.#o.name!, error: outcome.nameRefused });
    }
    this.#emit({ type: "ready", server: this.#serverName, generation: this.#generation });
    this.#stopOfflineSweep();
    if (this.#tracking.wanted && along.length === 0 && this.#o.resp === 3) this.#retrack(conn);
    const offline = this.#offline;
    this.#offline = [];
    conn.release(offline);
  }

  /**
   * The server refused `HELLO 3` and `resp` was not given: RESP2 for good
   * (reconnects and duplicates send no HELLO), and said so. Tracking cannot
   * work without push frames: its listeners hear it refused (near() then
   * goes by invalidation messages).
   */
  #fellBack(error: RedisReplyError): void {
    // `#o.resp` is 2 already: the handshake switched it as HELLO's refusal was read.
    this.#emit({ type: "resp-fallback", server: this.#serverName, error });
    if (this.#tracking.wanted) {
      this.#tracking.refused(
        new TypeError(`Cannot track: the server refused HELLO 3 (${error.message}), so the client speaks RESP2`),
      );
    }
  }

  // Tracking goes first on a new connection, ahead of the queued commands:
  // every read written after it is tracked. A refusal does not fail the
  // connection; the listeners are told to forget and nothing is kept.
  #retrack(conn: Connection): void {
    conn.send(this.#trackingCommand(conn));
  }

  #trackingCommand(conn: Connection): Command {
    this.#tracking.requested();
    const cmd = new Command(ClientTracking.COMMAND, false);
    cmd.resolve = () => {};
    cmd.reject = (error) => {
      if (this.#conn === conn) this.#tracking.refused(error);
    };
    return cmd;
  }

  /** Fail the commands waiting for a connection with `error` (a lazy client's first connection failed). */
  #failOffline(error: unknown): void {
    const offline = this.#offline;
    this.#offline = [];
    for (const cmd of offline) cmd.fail(error);
  }

  /**
   * Leave the current server for wherever `locate` now points: the open
   * connection is closed as if lost (written commands reject, unwritten ones
   * wait for the next), and a reconnect already waiting starts at once.
   */
  #reroute(reason: Error): void {
    if (this.#closed) return;
    const conn = this.#conn;
    if (conn !== undefined) {
      conn.destroy(reason);
      // Now, not when the socket reports its close: a command sent from here
      // on (a READONLY refusal sent again) must wait for the next server.
      this.#onClose(conn, reason);
      return;
    }
    if (this.#reconnectTimer !== undefined) {
      clearTimeout(this.#reconnectTimer);
      this.#reconnectTimer = undefined;
      void this.#open(false);
    }
  }

  #onClose(conn: Connection, error: Error | undefined): void {
    if (error !== undefined) this.#lastError = error;
    if (this.#conn !== conn) return;
    this.#conn = undefined;
    this.#pastWrites += conn.writes;
    const wasReady = this.#connected;
    this.#connected = false;
    if (wasReady) this.#emit({ type: "disconnect", server: this.#serverName, cause: error });
    this.#tracking.lost(`the connection to ${describeTarget(this.#o)} was lost`);
    const cause = this.#lastError;
    const target = describeTarget(this.#o);
    // Written commands may or may not have run: reject them, never resend
    // (a resent SET NX can look like a lost lease). A stream the decoder
    // refused is reported as such; anything else is a lost connection.
    conn.rejectWritten(
      cause instanceof ProtocolError
        ? cause
        : new ConnectionError(`Connection to ${target} lost before the reply arrived`, { cause }),
    );
    // Commands the socket never took wait for the next connection, ahead of later ones.
    const unsent = conn.takeUnsent();
    if (unsent.length > 0) this.#offline = this.#offline.length === 0 ? unsent : unsent.concat(this.#offline);
    // Never ready yet: this is the first attempt, whose failure is connect()'s rejection, not a reconnect.
    if (this.#closed || this.#generation === 0) return;
    if (this.#o.reconnect === false || this.#closing) {
      this.#shutdown(new ConnectionError(`Connection to ${target} closed`, { cause }));
      return;
    }
    if (this.#o.offlineQueue === 0) {
      const offline = this.#offline;
      this.#offline = [];
      for (const cmd of offline) cmd.fail(new ConnectionError(`Not connected to ${target}`, { cause }));
    }
    this.#startOfflineSweep();
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#o.reconnect === false) return;
    const delay = reconnectDelay(this.#attempt++, this.#o.reconnect, Math.random);
    this.#emit({ type: "reconnecting", server: this.#serverName, attempt: this.#attempt, delayMs: delay });
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
      for (const cmd of this.#offline) {
        if (cmd.state !== QUEUED) continue;
        if (now - cmd.issuedAt >= limit) {
          cmd.fail(
            new ConnectionError(
              `Not connected to ${describeTarget(this.#o)} for ${limit} ms (offlineTimeoutMs)${
                lastErrorText(this.#lastError)
              }`,
              { cause: this.#lastError },
            ),
          );
        } else keep.push(cmd);
      }
      this.#offline = keep;
      this.#maybeIdle();
    }, Math.min(limit, 100));
    this.#offlineSweep.unref?.();
  }

  #stopOfflineSweep(): void {
    clearInterval(this.#offlineSweep);
    this.#offlineSweep = undefined;
  }
}

/**
 * Make `client` leave its server for wherever its `locate` option now points
 * (the Sentinel client, on a failover). Not part of the public API.
 */
export function rerouteClient(client: RedisClient, reason: Error): void {
  reroute(client, reason);
}

/** `host:port` (or the socket path) of the server `client` talks to or last tried. Not part of the public API. */
export function serverOf(client: RedisClient): string {
  return currentServer(client);
}

/** ` (last error: ...)` naming why the last attempt failed, or nothing when none is known. */
function lastErrorText(error: unknown): string {
  return error === undefined ? "" : ` (last error: ${error instanceof Error ? error.message : String(error)})`;
}
