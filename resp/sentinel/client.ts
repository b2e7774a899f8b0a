/**
 * The Sentinel client: `connectSentinel()` and {@linkcode SentinelClient}.
 * Commands go through one `RedisClient` whose every connection attempt asks
 * the sentinels where the master is (`locate`) and whose handshake checks
 * that the server says it is master (`ROLE`). A failover is followed from
 * three signals, since any one alone is known to miss: `+switch-master` on
 * the sentinel connection, the periodic check, and the old master itself (a
 * READONLY reply, or the connection lost when the sentinels demote it). To
 * move, the data connection is closed as if lost: commands written to the old
 * master fail once and are never resent, those not yet written go to the new
 * one.
 *
 * @module
 */
import { RedisClient, rerouteClient, serverOf } from "../client.ts";
import { ConnectionError, isRedisReplyError } from "../errors.ts";
import type { Arg, RedisLike, Reply, SendOptions, TrackingClient, TrackingListener } from "../types.ts";
import { func } from "../shared/mod.ts";
import {
  type ResolvedSentinelOptions,
  resolveSentinelOptions,
  type SentinelAddress,
  type SentinelEvent,
  type SentinelOptions,
} from "./options.ts";
import { type MasterAddress, Sentinels } from "./sentinels.ts";

/**
 * Connect to the master of a group that Redis Sentinel watches: ask the
 * sentinels for it, check that it says it is master, and follow it across
 * failovers.
 *
 * @param options the sentinels' URLs, the group's name, and the data node's connection options.
 * @returns the client, connected to the master and past its handshake.
 * @throws {RangeError | TypeError} (synchronously) naming a bad setting or an unknown option (with the close one it resembles).
 * @throws {ConnectionError} (as a rejection) when no sentinel names a master, or the one named cannot be reached, refuses the login, or is not master.
 * @example Connect through the sentinels
 * ```ts
 * import { connectSentinel } from "@herdless/herdless";
 * const sentinels = (process.env.SENTINEL_URLS ?? "redis://127.0.0.1:26379").split(",");
 * const redis = await connectSentinel({ sentinels, name: process.env.SENTINEL_NAME ?? "mymaster" });
 * redis.onEvent((event) => {
 *   if (event.type === "failover") console.warn(`Redis master moved from ${event.from} to ${event.to}`);
 * });
 * await redis.send(["SET", "greeting", "hello"]);
 * console.log(await redis.send(["GET", "greeting"])); // "hello"
 * await redis.close();
 * ```
 */
export function connectSentinel(options: SentinelOptions): Promise<SentinelClient> {
  const client = new SentinelClient(resolveSentinelOptions(options));
  return client.ready.then(() => client);
}

/**
 * A connection to the master of a Sentinel group. Create it with
 * {@linkcode connectSentinel}. It speaks like a `RedisClient` (pipelining,
 * timeouts, the offline queue, `track()` for `near()`), and moves to the new
 * master on a failover: commands in flight at the switch reject with
 * `ConnectionError` (at most once, never resent), commands not yet written
 * go to the new master, and a command the old master refused with READONLY
 * (so never ran) is sent once more, to the new master.
 *
 * @example Hear a failover
 * ```ts
 * import { connectSentinel } from "@herdless/herdless";
 * const sentinels = (process.env.SENTINEL_URLS ?? "redis://127.0.0.1:26379").split(",");
 * const redis = await connectSentinel({
 *   sentinels,
 *   name: process.env.SENTINEL_NAME ?? "mymaster",
 *   onEvent: (event) => event.type === "failover" && console.warn(event.from, "->", event.to),
 * });
 * console.log(redis.master); // host:port of the master
 * await redis.close();
 * ```
 */
export class SentinelClient implements RedisLike, TrackingClient {
  readonly #o: ResolvedSentinelOptions;
  readonly #data: RedisClient;
  readonly #sentinels: Sentinels;
  readonly #listeners = new Set<(event: SentinelEvent) => void>();
  /** The master of the last ready connection. */
  #master: string | undefined;
  /** The data connection generation already left after a READONLY: later refusals from it move nothing. */
  #left = -1;
  #closed = false;
  /** Settles when the first connection is ready or has failed. */
  readonly ready: Promise<void>;

  /**
   * Start connecting. Prefer {@linkcode connectSentinel}, which validates options and waits for the first connection.
   *
   * @param options options already resolved and checked (`resolveSentinelOptions`).
   */
  constructor(options: ResolvedSentinelOptions) {
    this.#o = options;
    if (options.onEvent !== undefined) this.#listeners.add(options.onEvent);
    this.#sentinels = new Sentinels(options, {
      master: (address, why) => this.#follow(address, why),
      emit: (event) => this.#emit(event),
    });
    this.#data = new RedisClient({
      ...options.data,
      locate: () => this.#sentinels.master(),
      role: "master",
      onEvent: (event) => {
        if (event.type === "ready") {
          const from = this.#master;
          this.#master = event.server;
          this.#emit(event);
          if (from !== undefined && from !== event.server) this.#emit({ type: "failover", from, to: event.server });
          return;
        }
        this.#emit(event);
      },
    });
    this.ready = this.#data.ready.then(
      () => this.#sentinels.start(),
      (error) => {
        this.#sentinels.stop();
        throw error;
      },
    );
  }

  /** The master this client talks to (or is connecting to), as `host:port`. */
  get master(): string {
    return serverOf(this.#data);
  }

  /** The sentinels this client knows (`host:port`), those given and those learned from `SENTINEL sentinels`, the one that answered last first. */
  get sentinels(): readonly string[] {
    return this.#sentinels.known.map((s) => `${s.host.includes(":") ? `[${s.host}]` : s.host}:${s.port}`);
  }

  /** The server that serves `key`: the master, for every key (the pipeline keeps one clock estimate per server). */
  nodeFor(_key: Arg): string {
    return serverOf(this.#data);
  }

  /** Incremented on every successful (re)connect, a failover included: scripts are loaded again after one. */
  get generation(): number {
    return this.#data.generation;
  }

  /** The protocol spoken with the master: 2, or 3 (push frames, client tracking). */
  get resp(): 2 | 3 {
    return this.#data.resp;
  }

  /** Commands issued and not yet settled, as `RedisClient.pending`: those waiting for the new master during a failover included. */
  get pending(): number {
    return this.#data.pending;
  }

  /** True while a connection to the master is open and past its handshake. */
  get connected(): boolean {
    return this.#data.connected;
  }

  /** True while reads are tracked by the master (`track()` called, connected, not refused). */
  get tracking(): boolean {
    return this.#data.tracking;
  }

  /**
   * Send one command to the master and resolve with its reply, as
   * `RedisClient.send` does. A READONLY refusal (the server was demoted)
   * moves the client to the new master and sends the command there once more.
   *
   * @param command the command and its arguments, e.g. `["SET", key, value]`.
   * @param options a timeout, an abort signal, bytes instead of strings.
   * @returns the decoded reply.
   * @throws {RedisReplyError} (as a rejection) when the server answers with an error.
   * @throws {TimeoutError} (as a rejection) when the timeout runs out.
   * @throws {ConnectionError} (as a rejection) when the client is closed, or the connection was lost (or left for a new master) after the write.
   * @example Send through the sentinels' master
   * ```ts
   * import { connectSentinel } from "@herdless/herdless";
   * const sentinels = (process.env.SENTINEL_URLS ?? "redis://127.0.0.1:26379").split(",");
   * const redis = await connectSentinel({ sentinels, name: process.env.SENTINEL_NAME ?? "mymaster" });
   * console.log(await redis.send(["INCR", "visits"], { timeoutMs: 500 }));
   * await redis.close();
   * ```
   */
  send(command: readonly Arg[], options?: SendOptions): Promise<Reply> {
    return this.#data.send(command, options).catch((error) => {
      if (!isReadOnly(error)) throw error;
      this.#leave(error);
      // Refused, so never executed: once more, on the next connection.
      return this.#data.send(command, options);
    });
  }

  /**
   * Track reads on the master for `near()`, as `RedisClient.track` does. A
   * failover resets the listener (every entry read before is dropped) and
   * tracking is turned on again on the new master before any other command.
   *
   * @param listener what hears invalidations and resets.
   * @returns the function that stops listening.
   * @throws {TypeError} (as a rejection) on a RESP2 connection.
   * @example Track the master's keys
   * ```ts
   * import { connectSentinel } from "@herdless/herdless";
   * const sentinels = (process.env.SENTINEL_URLS ?? "redis://127.0.0.1:26379").split(",");
   * const redis = await connectSentinel({ sentinels, name: process.env.SENTINEL_NAME ?? "mymaster", resp: 3 });
   * const stop = await redis.track({ invalidate: (keys) => console.log("changed:", keys), reset: () => {} });
   * stop();
   * await redis.close();
   * ```
   */
  track(listener: TrackingListener): Promise<() => Promise<void>> {
    return this.#data.track(listener);
  }

  /**
   * Hear the data connection's state (`connect`, `ready`, `disconnect`,
   * `reconnecting`, `error`, as `RedisClient.onEvent`) and `failover` when
   * the client moved to a new master. A periodic check that reached no
   * sentinel is an `error` event whose server is `sentinels of <name>`.
   *
   * @param listener called with each event; a throw is ignored.
   * @returns the function that stops listening.
   * @example Log failovers
   * ```ts
   * import { connectSentinel } from "@herdless/herdless";
   * const sentinels = (process.env.SENTINEL_URLS ?? "redis://127.0.0.1:26379").split(",");
   * const redis = await connectSentinel({ sentinels, name: process.env.SENTINEL_NAME ?? "mymaster" });
   * const stop = redis.onEvent((event) => {
   *   if (event.type === "failover") console.warn(`master moved: ${event.from} -> ${event.to}`);
   * });
   * stop();
   * await redis.close();
   * ```
   */
  onEvent(listener: (event: SentinelEvent) => void): () => void {
    func("listen", "listener", listener);
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Open a sibling: another client to the same group with the same options,
   * which follows failovers on its own (`near()` uses one to listen for
   * invalidations).
   *
   * @returns the new client, connected.
   * @throws {ConnectionError} (as a rejection) as {@linkcode connectSentinel} does.
   * @example A second connection to the master
   * ```ts
   * import { connectSentinel } from "@herdless/herdless";
   * const sentinels = (process.env.SENTINEL_URLS ?? "redis://127.0.0.1:26379").split(",");
   * const redis = await connectSentinel({ sentinels, name: process.env.SENTINEL_NAME ?? "mymaster" });
   * const sibling = await redis.duplicate();
   * console.log(sibling.master === redis.master); // true
   * await Promise.all([sibling.close(), redis.close()]);
   * ```
   */
  duplicate(): Promise<SentinelClient> {
    if (this.#closed) return Promise.reject(new ConnectionError("Cannot duplicate: the client is closed"));
    // Its own listeners, as RedisClient.duplicate(): none of this client's.
    const { onEvent: _, ...given } = this.#o.given;
    return connectSentinel({ ...given, sentinels: this.#sentinels.known.map(sentinelUrl) });
  }

  /**
   * Listen to push frames (pub/sub messages, RESP3 pushes), as
   * `RedisClient.onPush`; subscriptions are made again on the new master
   * after a failover.
   *
   * @param listener called with each push frame, in order.
   * @returns the function that stops listening.
   * @example Receive one message through the master
   * ```ts
   * import { connectSentinel, type Reply } from "@herdless/herdless";
   * const sentinels = (process.env.SENTINEL_URLS ?? "redis://127.0.0.1:26379").split(",");
   * const redis = await connectSentinel({ sentinels, name: process.env.SENTINEL_NAME ?? "mymaster", resp: 3 });
   * const subscriber = await redis.duplicate();
   * const message = new Promise<Reply[]>((resolve) => subscriber.onPush(resolve));
   * await subscriber.send(["SUBSCRIBE", "news"]);
   * await redis.send(["PUBLISH", "news", "hello"]);
   * console.log(await message); // ["message", "news", "hello"]
   * await Promise.all([subscriber.close(), redis.close()]);
   * ```
   */
  onPush(listener: (push: Reply[]) => void): () => void {
    return this.#data.onPush(listener);
  }

  /**
   * Wait for the commands already issued, then close the master connection
   * and the sentinel connection.
   *
   * @returns a promise that settles once both are closed; the same one on every call.
   */
  close(): Promise<void> {
    this.#closed = true;
    this.#sentinels.stop();
    return this.#data.close();
  }

  /** Close at once: every pending command rejects with `ConnectionError`. */
  destroy(): void {
    this.#closed = true;
    this.#sentinels.stop();
    this.#data.destroy();
  }

  #emit(event: SentinelEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A logging hook must not break failovers.
      }
    }
  }

  /** The sentinels name `address`: move there unless the client is there already. */
  #follow(address: MasterAddress, why: string): void {
    const to = `${address.host}:${address.port}`;
    const from = serverOf(this.#data);
    if (to === from) return;
    rerouteClient(this.#data, new ConnectionError(`The sentinels moved the master from ${from} to ${to} (${why})`));
  }

  /** The master refused a write with READONLY: it was demoted; leave it once. */
  #leave(error: unknown): void {
    const generation = this.#data.generation;
    if (this.#left === generation) return;
    this.#left = generation;
    rerouteClient(
      this.#data,
      new ConnectionError(`${serverOf(this.#data)} refused a write with READONLY: it is no longer master`, {
        cause: error,
      }),
    );
  }
}

function isReadOnly(error: unknown): boolean {
  return isRedisReplyError(error) && (error.code === "READONLY" || error.message.includes("READONLY"));
}

function sentinelUrl(s: SentinelAddress): string {
  const auth = s.password === undefined && s.username === undefined
    ? ""
    : `${encodeURIComponent(s.username ?? "")}${s.password === undefined ? "" : `:${encodeURIComponent(s.password)}`}@`;
  const host = s.host.includes(":") ? `[${s.host}]` : s.host;
  return `${s.tls ? "rediss" : "redis"}://${auth}${host}:${s.port}`;
}
