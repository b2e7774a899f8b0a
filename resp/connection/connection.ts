/**
 * One socket's life, and where replies are matched to commands: the
 * commands written on it wait in a FIFO, and each reply the decoder
 * completes settles the one at its head (RESP2 pub/sub messages and RESP3
 * pushes aside). Every command issued in the same tick leaves in one socket
 * write (automatic pipelining), and a full socket holds later commands until
 * `drain`; a large chunk of replies is decoded in two turns (`split_feed.ts`)
 * so the next commands leave while the rest decodes. A command whose timeout
 * passed after its write keeps its place, since its reply must still be read
 * to keep the rest in order; a reply that keeps growing long after that
 * resets the connection.
 *
 * The client (`client.ts`) owns what outlives a socket: the offline queue,
 * the deadline heap (a timeout counts from the call, not from the write),
 * reconnects.
 *
 * @module
 */
import { type Command, commandName, QUEUED, SENT, SETTLED, WRITTEN } from "./command.ts";
import { Decoder } from "../decode/mod.ts";
import { CommandWriter } from "./encode.ts";
import { explainNoAuth, explainNoPerm } from "./acl.ts";
import { ConnectionError, ProtocolError, RedisReplyError } from "../errors.ts";
import { Fifo } from "./fifo.ts";
import { SPLIT_BYTES, SPLIT_WAITING, SplitFeed } from "./split_feed.ts";
import { reportOverdueCheck } from "./debug.ts";
import type { ResolvedOptions } from "../options.ts";
import { isMessage, isSubscribeKind, subscriptionCount } from "./subscriptions.ts";
import { openTransport, type Transport, type TransportEvents } from "../transport/mod.ts";
import type { Reply, ReplyMap } from "../types.ts";

/**
 * Settled once: `resolved.then(fn)` runs `fn` as a microtask, as
 * `queueMicrotask(fn)` does, for one reaction and one promise. Node's
 * `queueMicrotask` also creates an `AsyncResource` and a bound function per
 * call, and runs the callback through `runInAsyncScope`: memory and CPU on
 * every flush of the hot path.
 */
const resolved = Promise.resolve();

/** What a {@linkcode Connection} tells its client. */
export interface ConnectionHooks {
  /** A RESP3 push frame, or a RESP2 pub/sub message; never a command's reply. */
  push(value: Reply[]): void;
  /**
   * The socket closed (`error` is why, when known). The commands written on
   * it are the client's to reject ({@linkcode Connection.rejectWritten}: it
   * knows the target and the last error to name); {@linkcode Connection.takeUnsent}
   * hands back the ones never written, for the next connection.
   */
  closed(connection: Connection, error: Error | undefined): void;
}

/** One socket to Redis and the commands written on it, in order. */
export class Connection {
  /**
   * Open a socket and the connection over it.
   *
   * @param o the client's resolved options (where to connect, RESP version).
   * @param hooks where pushes and the close go.
   * @throws {ConnectionError} (as a rejection) when the socket cannot be opened.
   */
  static async open(o: ResolvedOptions, hooks: ConnectionHooks): Promise<Connection> {
    const connection = new Connection(o.resp === 2, o.maxBulkBytes, hooks, o.password === undefined);
    const transport = await openTransport(o, connection.#events);
    connection.#transport = transport;
    // A stream refused before the transport was in hand: close it now.
    if (connection.#refused !== undefined) transport.destroy(connection.#refused);
    return connection;
  }

  #resp2: boolean;
  /** No password was given: a NOAUTH reply says that one is needed. */
  readonly #anonymous: boolean;
  readonly #hooks: ConnectionHooks;
  readonly #events: TransportEvents;
  #transport: Transport | undefined;
  #refused: Error | undefined;
  #closed = false;
  #decoder: Decoder;
  /** The decoder failed: what is left of the stream is never decoded (its bytes have no place any more). */
  #undecodable = false;
  readonly #split = new SplitFeed((chunk) => {
    if (this.#undecodable) return 0;
    const frames = this.#frames;
    try {
      this.#decoder.feed(chunk);
    } catch (error) {
      this.#undecodable = true;
      if (this.#transport === undefined) this.#refused ??= error as Error;
      else if (!this.#closed) this.#transport.destroy(error as Error);
    }
    return this.#frames - frames;
  });
  #writer = new CommandWriter();
  /** Commands issued this tick, or held while the socket is full. */
  #unsent: Command[] = [];
  #written = new Fifo<Command>();
  #flushScheduled = false;
  #blocked = false;
  #writes = 0;
  /** RESP2 only: a subscribed connection receives messages as plain arrays. */
  #subscribed2 = false;
  #bytesIn = 0;
  /**
   * Top-level frames decoded (replies and pushes): an overdue check tells
   * a reply that grows without end from bytes that completed other frames.
   */
  #frames = 0;
  #overdue: Command | undefined;
  #overdueTimer: ReturnType<typeof setTimeout> | undefined;
  /**
   * Called after a reply or a flush settles a command, while the client
   * waits for its last reply (`close()`); undefined the rest of the time so
   * the reply path pays one comparison.
   */
  onSettle: (() => void) | undefined = undefined;

  private constructor(resp2: boolean, maxBulkBytes: number, hooks: ConnectionHooks, anonymous: boolean) {
    this.#resp2 = resp2;
    this.#anonymous = anonymous;
    this.#hooks = hooks;
    this.#decoder = new Decoder({
      reply: (value, attribute) => {
        this.#frames++;
        this.#onReply(value, attribute);
      },
      push: (value) => {
        this.#frames++;
        this.#onPush(value);
      },
      announced: (length) => this.#onAnnounced(length),
    }, { maxBulkBytes });
    this.#events = {
      data: (chunk) => {
        this.#bytesIn += chunk.length;
        this.#split.push(chunk, chunk.length >= SPLIT_BYTES && this.#written.length >= SPLIT_WAITING);
      },
      drain: () => {
        this.#blocked = false;
        // Everything written is out: the writer's memory is free again.
        if (this.#transport?.flushed()) this.#writer.rewind();
        this.#flush();
      },
      close: (error) => {
        this.#split.flush();
        this.#closed = true;
        this.#stopOverdueWatch();
        this.#hooks.closed(this, error);
      },
    };
  }

  /**
   * Read what follows as RESP2 (pub/sub messages as plain arrays): the
   * server refused `HELLO 3`. Called from the handler of HELLO's reply,
   * before the next reply is decoded.
   */
  speakResp2(): void {
    this.#resp2 = true;
  }

  /** Commands issued on this connection and not yet answered (queued or written). */
  get pending(): number {
    return this.#unsent.length + this.#written.length;
  }

  /** Commands issued and not yet written: waiting for the next tick or for `drain`. */
  get queued(): number {
    return this.#unsent.length;
  }

  /** Socket writes of queued commands; each carries every command issued in one tick. */
  get writes(): number {
    return this.#writes;
  }

  /** True when every command issued on this connection has settled (answered, timed out or aborted). */
  get idle(): boolean {
    for (let i = 0; i < this.#unsent.length; i++) if (this.#unsent[i]!.state !== SETTLED) return false;
    for (let i = 0; i < this.#written.length; i++) if (this.#written.at(i)!.state !== SETTLED) return false;
    return true;
  }

  /** Queue `cmd` for the write that ends this tick. */
  send(cmd: Command): void {
    this.#unsent.push(cmd);
    if (!this.#blocked && !this.#flushScheduled) {
      this.#flushScheduled = true;
      resolved.then(this.#flush);
    }
  }

  /** Queue `commands` (held while there was no connection) and write them now. */
  release(commands: Command[]): void {
    if (commands.length === 0) return;
    this.#unsent = this.#unsent.length === 0 ? commands : this.#unsent.concat(commands);
    this.#flush();
  }

  /**
   * Write `commands` at once, in one write, ahead of anything queued: the
   * handshake, before the client releases what waited for it. Not counted
   * in {@linkcode Connection.writes}.
   */
  writeFirst(commands: readonly Command[]): void {
    const before = this.#written.length;
    this.#encode(commands);
    try {
      this.#transport?.write(this.#writer.take());
    } catch (error) {
      this.#writeFailed(error, this.#written.length - before);
    }
  }

  // Encode `commands` into the writer, in order, and move them to the FIFO
  // of written commands. One that timed out or was aborted before its write
  // is never written; one whose encoding failed (the writer dropped it
  // whole) fails now with that error instead of waiting for a reply that
  // never comes, and the others still leave.
  #encode(commands: readonly Command[]): void {
    const writer = this.#writer;
    const written = this.#written;
    for (let i = 0; i < commands.length; i++) {
      const cmd = commands[i]!;
      if (cmd.state !== QUEUED) continue;
      try {
        writer.push(cmd.args);
      } catch (error) {
        cmd.fail(error);
        continue;
      }
      cmd.args = SENT;
      cmd.state = WRITTEN;
      if (written.length === 0) this.#decoder.buffers = cmd.buffers;
      written.push(cmd);
    }
  }

  /** Hand back the commands never written (the socket closed first), in order. */
  takeUnsent(): Command[] {
    const unsent = this.#unsent;
    this.#unsent = [];
    return unsent;
  }

  /**
   * Reject every command of this connection with `error`, the written ones
   * first: they may or may not have run, and are never sent again.
   */
  rejectAll(error: unknown): void {
    this.rejectWritten(error);
    const unsent = this.takeUnsent();
    for (const cmd of unsent) cmd.fail(error);
  }

  /** Reject the written commands with `error`; they may or may not have run. */
  rejectWritten(error: unknown): void {
    const written = this.#written;
    this.#written = new Fifo();
    for (let cmd = written.shift(); cmd !== undefined; cmd = written.shift()) cmd.fail(error);
  }

  /** Close at once; the `closed` hook follows with `error`. */
  destroy(error?: Error): void {
    this.#stopOverdueWatch();
    this.#split.drop();
    this.#transport?.destroy(error);
  }

  readonly #flush = (): void => {
    this.#flushScheduled = false;
    const transport = this.#transport;
    if (this.#closed || transport === undefined || this.#blocked) return;
    const unsent = this.#unsent;
    if (unsent.length === 0) return;
    this.#unsent = [];
    const writer = this.#writer;
    const written = this.#written;
    const before = written.length;
    this.#encode(unsent);
    if (writer.length === 0) {
      this.onSettle?.();
      return;
    }
    this.#writes++;
    let done: boolean;
    try {
      done = transport.write(writer.take());
    } catch (error) {
      this.#writeFailed(error, written.length - before);
      return;
    }
    if (!done) this.#blocked = true;
    // The kernel took it all: the next writes reuse the same memory.
    else if (transport.flushed()) writer.rewind();
  };

  /**
   * The transport threw while taking a write: the `count` commands of that
   * write (the newest written) fail at once with its error, and the socket,
   * whose stream may now hold part of them, is closed with it.
   */
  #writeFailed(error: unknown, count: number): void {
    const failed: Command[] = [];
    const written = this.#written;
    const keep = new Fifo<Command>();
    const total = written.length;
    for (let i = 0; i < total; i++) {
      const cmd = written.shift()!;
      if (i < total - count) keep.push(cmd);
      else failed.push(cmd);
    }
    this.#written = keep;
    for (const cmd of failed) cmd.fail(error);
    this.destroy(error instanceof Error ? error : new Error(String(error)));
  }

  #onReply(value: Reply, attribute: ReplyMap | undefined): void {
    // RESP2 pub/sub: a subscribed connection receives messages as ordinary
    // arrays, interleaved with the replies to (un)subscribe commands; they
    // must never be matched to the command at the head of the queue.
    if (this.#subscribed2 && isMessage(value)) {
      this.#onPush(value);
      return;
    }
    const cmd = this.#written.peek();
    if (cmd === undefined) throw new ProtocolError("Reply received with no command waiting for it", -1);
    // RESP2 (un)subscribe confirmations carry the count of subscriptions
    // left: the connection is in subscribed mode exactly while it is above 0,
    // as Redis itself sees it (not as of when the command was sent).
    if (this.#resp2 && Array.isArray(value)) {
      const count = subscriptionCount(value);
      if (count >= 0) this.#subscribed2 = count > 0;
    }
    if (cmd.expect > 1 && Array.isArray(value)) {
      cmd.expect--;
      return;
    }
    this.#written.shift();
    cmd.replied = true;
    this.#decoder.buffers = this.#written.peek()?.buffers ?? false;
    if (attribute !== undefined && cmd.state !== SETTLED) cmd.options?.onAttribute?.(attribute);
    // Redis names a refused command but not the rule that would allow it, nor the password that is missing.
    if (value instanceof RedisReplyError) {
      cmd.fail(
        value.code === "NOPERM"
          ? explainNoPerm(value, cmd.name)
          : value.code === "NOAUTH" && this.#anonymous
          ? explainNoAuth(value)
          : value,
      );
    } else cmd.succeed(value);
    if (this.onSettle !== undefined) this.onSettle();
  }

  /**
   * A reply payload of `length` bytes (1 MiB or more) was announced: it is
   * the reply of the command at the head. A command sent with `bytesPerMs`
   * has its deadline moved later by the time those bytes take at that rate,
   * so a large value is not cut off by a deadline set before its size was
   * known; others keep theirs.
   */
  #onAnnounced(length: number): void {
    const cmd = this.#written.peek();
    const rate = cmd?.options?.bytesPerMs;
    if (rate === undefined || cmd!.heapIndex < 0 || cmd!.state === SETTLED) return;
    cmd!.deadlines!.postpone(cmd!, cmd!.deadline + Math.ceil(length / rate));
  }

  #onPush(value: Reply[]): void {
    const kind = typeof value[0] === "string" ? value[0] : "";
    if (isSubscribeKind(kind)) {
      // RESP3 answers SUBSCRIBE with push frames, one per channel, instead of a reply.
      const cmd = this.#written.peek();
      if (cmd !== undefined && typeof cmd.name === "string" && cmd.name.toLowerCase() === kind) {
        if (--cmd.expect === 0) {
          cmd.expect = 1;
          this.#onReply(value, undefined);
        }
      }
      return;
    }
    this.#hooks.push(value);
  }

  /**
   * `cmd`, written on this connection, timed out. A reply nobody waits for
   * still has to be read to keep replies in order, but a server streaming a
   * reply that never ends (an endless aggregate) would hold the connection
   * and grow the decoder forever. The connection is reset when, for a whole
   * grace period (the command's own timeout again, at least 1 s), `cmd`
   * stayed at the head and bytes kept arriving without completing a single
   * frame: they all went into one frame that does not end. Bytes that
   * completed other frames are no sign of trouble: the replies ahead of
   * `cmd` (a large value still arriving when it timed out) and RESP3 pushes
   * (tracking invalidations) between replies. A silent server (paused,
   * busy) costs no memory and may still answer the commands queued behind:
   * it is left alone and checked again.
   */
  watchOverdue(cmd: Command): void {
    if (this.#overdue !== undefined || this.#closed) return;
    this.#overdue = cmd;
    const graceMs = Math.max(1000, cmd.deadline - cmd.issuedAt);
    const bytesAtStart = this.#bytesIn;
    const framesAtStart = this.#frames;
    this.#overdueTimer = setTimeout(() => {
      this.#overdue = undefined;
      this.#overdueTimer = undefined;
      if (this.#closed || this.#transport === undefined) return;
      if (cmd.replied) {
        reportOverdueCheck("replied");
        const head = this.#written.peek();
        if (head !== undefined && head.state === SETTLED) this.watchOverdue(head);
        return;
      }
      // A frame completed in the period (a reply ahead, which may have made
      // `cmd` the head just now, or a push): start a new period from here.
      // Otherwise no reply completed, so the head did not change: `cmd` at
      // the head now was at the head throughout, and every byte of the
      // period went into the one frame still open.
      if (this.#bytesIn === bytesAtStart || this.#frames !== framesAtStart || this.#written.peek() !== cmd) {
        reportOverdueCheck("watching");
        this.watchOverdue(cmd);
        return;
      }
      reportOverdueCheck("reset");
      this.#transport.destroy(
        new ConnectionError(
          `Reset the connection: the reply to ${
            commandName(cmd.name)
          } is still incomplete ${graceMs} ms after it timed out`,
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
}
