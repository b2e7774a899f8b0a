/**
 * Lease wake-ups over pub/sub, for a `wakeups` client given explicitly (an
 * adapter's cache has no client tracking): one subscription per connection
 * and channel, fanned out to local waiters by data key. The publication and
 * release scripts PUBLISH the data key on the cache's channel.
 *
 * Push is an optimisation, never a dependency: a message can be lost across a
 * reconnect, and an expired lease announces nothing, so every waiter also
 * polls with jitter. Setting it up (HELLO to learn the protocol, then
 * SUBSCRIBE) is bounded by the cache's `commandTimeoutMs` per command; when
 * it fails, waiters poll and it is tried again later. A connection that
 * speaks RESP2 is never subscribed on: its waiters poll. A waiter registers (`watch`) and re-arms before each read,
 * so a message produced after that read executed is never lost, even when
 * its frame is decoded before the read's continuation runs.
 *
 * @module
 */
import { replyText, timeoutOptions } from "../../../resp/shared/mod.ts";
import { isRedisReplyError } from "../../../resp/errors.ts";
import type { RedisLike, Reply } from "../../../resp/types.ts";
import type { Ticket, Wakeups } from "../../contract.ts";
import type { PushCapable, WakeupSource } from "../../types.ts";
import { WakeupTicket } from "./ticket.ts";

interface Channel {
  /** The caches (Wakeups) holding this subscription or waiting on its attempt. */
  refs: number;
  /** The one attempt to subscribe; a channel whose attempt fails leaves its hub at once. */
  readonly subscribed: Promise<Attempt>;
  readonly watchers: Map<string, Set<WakeupTicket>>;
}

/** `push`: subscribed; `never`: the connection cannot push (RESP2), poll for good; `failed`: poll, retry later. */
type Attempt = "push" | "never" | "failed";

/** The subscriptions of one connection: one push listener, shared by every cache on it. */
class Hub {
  readonly channels = new Map<string, Channel>();
  #stop: (() => void) | undefined;

  constructor(readonly client: PushCapable) {
    this.#stop = client.onPush((push) => this.#onPush(push));
  }

  #onPush(push: Reply[]): void {
    if (push[0] !== "message") return;
    const channel = this.channels.get(replyText(push[1]) ?? "");
    const key = replyText(push[2]);
    if (channel === undefined || key === undefined) return;
    const tickets = channel.watchers.get(key);
    if (tickets !== undefined) { for (const ticket of tickets) ticket.wake(); }
  }

  /** Drop `channel` (if it is still the one under `name`); the push listener goes with the last one. */
  forget(name: string, channel: Channel): void {
    if (this.channels.get(name) !== channel) return;
    this.channels.delete(name);
    if (this.channels.size > 0) return;
    this.#stop?.();
    this.#stop = undefined;
    if (hubs.get(this.client) === this) hubs.delete(this.client);
  }
}

const hubs = new WeakMap<PushCapable, Hub>();

// After a failed attempt, waiters poll and the next attempt waits this long.
const RETRY_MS = 1000;

function isPushCapable(redis: RedisLike): redis is PushCapable {
  return typeof (redis as Partial<PushCapable>).onPush === "function";
}

// `HELLO` without arguments reports the connection's protocol without changing it.
async function speaksResp3(redis: PushCapable, timeoutMs: number): Promise<boolean> {
  let hello: Reply;
  try {
    hello = await redis.send(["HELLO"], timeoutOptions(timeoutMs, "commandTimeoutMs"));
  } catch (error) {
    // A server that answers HELLO with an error (older than Redis 6) has no RESP3.
    if (isRedisReplyError(error)) return false;
    throw error;
  }
  if (Array.isArray(hello)) {
    const i = hello.indexOf("proto");
    return i >= 0 && hello[i + 1] === 3;
  }
  return hello !== null && typeof hello === "object" && !(hello instanceof Uint8Array) && !(hello instanceof Error) &&
    (hello as Record<string, Reply>).proto === 3;
}

// Every command has a timeout: without one, a connection that stopped
// answering would hold the first waiter for as long as the client's own
// timeout (possibly forever).
async function subscribe(client: PushCapable, channel: string, timeoutMs: number): Promise<Attempt> {
  try {
    // RESP2 pub/sub turns a connection into a subscriber that refuses other
    // commands, and its messages look like replies: never subscribe there.
    if (!(await speaksResp3(client, timeoutMs))) return "never";
  } catch {
    return "failed";
  }
  try {
    await client.send(["SUBSCRIBE", channel], timeoutOptions(timeoutMs, "commandTimeoutMs"));
    return "push";
  } catch {
    // A SUBSCRIBE that timed out may still take effect, and the client keeps
    // a refused one to restore after a reconnect (where it would fail the
    // handshake): undo it. Not awaited, so the waiter polls at once; it is
    // bounded by its timeout, and if it fails the connection is gone and the
    // subscription with it.
    client.send(["UNSUBSCRIBE", channel], timeoutOptions(timeoutMs, "commandTimeoutMs")).catch(() => {});
    return "failed";
  }
}

/** Where a cache's waiters learn of publications: its context's settings. */
export interface WakeupContext {
  readonly wakeups: WakeupSource;
  readonly redis: RedisLike;
  readonly channel: string;
  readonly commandTimeoutMs: number;
  readonly now: () => number;
}

/** A cache's view of publication announcements on its channel. */
export class ChannelWakeups implements Wakeups {
  readonly #client: PushCapable | undefined;
  readonly #channel: string;
  readonly #timeoutMs: number;
  readonly #now: () => number;
  /** Set while this cache holds a share of a working subscription. */
  #hub: Hub | undefined;
  #joined: Channel | undefined;
  #attempt: Promise<void> | undefined;
  #failures = 0;
  #retryAt = 0;
  #never = false;
  #closed = false;

  constructor(c: WakeupContext) {
    const client = c.wakeups === "poll" ? undefined : c.wakeups === "auto" ? c.redis : c.wakeups;
    this.#client = client !== undefined && isPushCapable(client) ? client : undefined;
    this.#channel = c.channel;
    this.#timeoutMs = c.commandTimeoutMs;
    this.#now = c.now;
  }

  /**
   * Subscribe on first use. Resolves `true` when announcements will arrive
   * by push, `false` when waiters poll this time: a RESP2 connection, an
   * adapter (for good), or a failed or pending retry. The first attempt is
   * awaited (bounded by `commandTimeoutMs` per command) so the first waiters
   * are woken by push; after a failure, one retry starts at most every
   * second and waiters poll instead of waiting for it.
   */
  async ready(): Promise<boolean> {
    if (this.#hub !== undefined) return true;
    if (this.#client === undefined || this.#never || this.#closed) return false;
    if (this.#attempt === undefined) {
      if (this.#failures > 0 && this.#now() < this.#retryAt) return false;
      this.#attempt = this.#subscribe(this.#client).finally(() => (this.#attempt = undefined));
    }
    if (this.#failures === 0) await this.#attempt;
    return this.#hub !== undefined;
  }

  // Never rejects: its outcome is recorded in the fields.
  async #subscribe(client: PushCapable): Promise<void> {
    let hub = hubs.get(client);
    if (hub === undefined) hubs.set(client, hub = new Hub(client));
    let channel = hub.channels.get(this.#channel);
    if (channel === undefined) {
      const created: Channel = {
        refs: 0,
        watchers: new Map(),
        subscribed: subscribe(client, this.#channel, this.#timeoutMs),
      };
      hub.channels.set(this.#channel, created);
      const owner = hub;
      // Registered first, so it runs before any holder sees the outcome: a
      // failed channel is gone from the hub (its listener too, if it was the
      // last) before anyone retries, and nothing keeps a share of it.
      created.subscribed.then((attempt) => attempt === "push" || owner.forget(this.#channel, created));
      channel = created;
    }
    channel.refs++;
    const attempt = await channel.subscribed;
    if (attempt === "push") {
      this.#hub = hub;
      this.#joined = channel;
      this.#failures = 0;
      return;
    }
    channel.refs--;
    if (attempt === "never") this.#never = true;
    else {
      this.#failures++;
      this.#retryAt = this.#now() + RETRY_MS;
    }
  }

  /** Register interest in `key` now; announcements from here on wake the ticket. */
  watch(key: string): Ticket {
    const watchers = this.#joined?.watchers;
    if (watchers === undefined) return new WakeupTicket(() => {});
    let set = watchers.get(key);
    if (set === undefined) watchers.set(key, set = new Set());
    const ticket = new WakeupTicket(() => {
      set.delete(ticket);
      if (set.size === 0 && watchers.get(key) === set) watchers.delete(key);
    });
    set.add(ticket);
    return ticket;
  }

  /** Drop this cache's share of the subscription (after an attempt in flight settles); the last one unsubscribes. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#attempt;
    const hub = this.#hub;
    const channel = this.#joined;
    this.#hub = undefined;
    this.#joined = undefined;
    if (hub === undefined || channel === undefined || --channel.refs > 0) return;
    hub.forget(this.#channel, channel);
    try {
      await hub.client.send(["UNSUBSCRIBE", this.#channel], timeoutOptions(this.#timeoutMs, "commandTimeoutMs"));
    } catch {
      // The connection is closed or gone: the subscription went with it.
    }
  }
}
