/**
 * How lease waiters learn that a value was published (or a lease released)
 * without hammering Redis: one pub/sub subscription per connection and
 * channel, fanned out to local waiters by data key.
 *
 * Push is an optimisation, never a dependency: a message can be lost across a
 * reconnect, and an expired lease announces nothing, so every waiter also
 * polls with jitter. A waiter registers (`watch`) and re-arms before each read,
 * so a message produced after that read executed is never lost, even when
 * its frame is decoded before the read's continuation runs.
 *
 * @module
 */
import { clearTimeout, setTimeout } from "node:timers";
import type { RedisLike, Reply } from "../resp/types.ts";
import { NEVER } from "./_call.ts";
import type { PushCapable, WakeupSource } from "./_types.ts";

const decoder = new TextDecoder();

function text(value: Reply | undefined): string | undefined {
  if (typeof value === "string") return value;
  // A push frame decoded while a `buffers` command headed the queue carries bytes.
  if (value instanceof Uint8Array) return decoder.decode(value);
  return undefined;
}

/** One local waiter's interest in one data key. */
export class Ticket {
  #woken = false;
  #resolve: (() => void) | undefined;
  readonly #unwatch: () => void;

  constructor(unwatch: () => void) {
    this.#unwatch = unwatch;
  }

  /** Called by the hub when the key was announced. */
  wake(): void {
    this.#woken = true;
    this.#resolve?.();
  }

  /** Forget earlier announcements: call just before reading the key. */
  arm(): void {
    this.#woken = false;
  }

  /**
   * Resolve when the key is announced (at once if it was since `arm`) or
   * after `ms`; reject with `signal.reason` when `signal` aborts.
   */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.#woken) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        if (signal !== NEVER) signal.removeEventListener("abort", onAbort);
        this.#resolve = undefined;
      };
      const onAbort = () => {
        done();
        reject(signal.reason);
      };
      const timer = setTimeout(() => {
        done();
        resolve();
      }, ms);
      this.#resolve = () => {
        done();
        resolve();
      };
      if (signal !== NEVER) signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Stop receiving announcements. */
  close(): void {
    this.#resolve = undefined;
    this.#unwatch();
  }
}

interface Channel {
  refs: number;
  subscribed: Promise<boolean>;
  readonly watchers: Map<string, Set<Ticket>>;
}

/** The subscriptions of one connection: one push listener, shared by every cache on it. */
class Hub {
  readonly channels = new Map<string, Channel>();
  #stop: (() => void) | undefined;

  constructor(readonly client: PushCapable) {
    this.#stop = client.onPush((push) => this.#onPush(push));
  }

  #onPush(push: Reply[]): void {
    if (push[0] !== "message") return;
    const channel = this.channels.get(text(push[1]) ?? "");
    const key = text(push[2]);
    if (channel === undefined || key === undefined) return;
    const tickets = channel.watchers.get(key);
    if (tickets !== undefined) for (const ticket of tickets) ticket.wake();
  }

  stop(): void {
    this.#stop?.();
    this.#stop = undefined;
  }
}

const hubs = new WeakMap<PushCapable, Hub>();

function isPushCapable(redis: RedisLike): redis is PushCapable {
  return typeof (redis as Partial<PushCapable>).onPush === "function";
}

// `HELLO` without arguments reports the connection's protocol without changing it.
async function speaksResp3(redis: PushCapable): Promise<boolean> {
  const hello = await redis.send(["HELLO"]);
  if (Array.isArray(hello)) {
    const i = hello.indexOf("proto");
    return i >= 0 && hello[i + 1] === 3;
  }
  return hello !== null && typeof hello === "object" && !(hello instanceof Uint8Array) && !(hello instanceof Error) &&
    (hello as Record<string, Reply>).proto === 3;
}

/** A cache's view of publication announcements on its channel. */
export class Wakeups {
  readonly #source: WakeupSource;
  readonly #redis: RedisLike;
  readonly #channel: string;
  #hub: Promise<Hub | undefined> | undefined;
  #closed = false;

  constructor(source: WakeupSource, redis: RedisLike, channel: string) {
    this.#source = source;
    this.#redis = redis;
    this.#channel = channel;
  }

  /**
   * Subscribe on first use. Resolves `true` when announcements will arrive
   * by push, `false` when waiters only poll (RESP2, an adapter, a failure).
   */
  async ready(): Promise<boolean> {
    this.#hub ??= this.#subscribe();
    return (await this.#hub) !== undefined;
  }

  async #subscribe(): Promise<Hub | undefined> {
    if (this.#closed || this.#source === "poll") return undefined;
    const client = this.#source === "auto" ? this.#redis : this.#source;
    if (!isPushCapable(client)) return undefined;
    let hub = hubs.get(client);
    let channel = hub?.channels.get(this.#channel);
    if (channel !== undefined) {
      channel.refs++;
      return (await channel.subscribed) ? hub : undefined;
    }
    if (hub === undefined) {
      hub = new Hub(client);
      hubs.set(client, hub);
    }
    channel = {
      refs: 1,
      watchers: new Map(),
      subscribed: (async () => {
        try {
          if (this.#source === "auto" && !(await speaksResp3(client))) return false;
          await client.send(["SUBSCRIBE", this.#channel]);
          return true;
        } catch {
          // Polling still works; push only makes waiters faster.
          return false;
        }
      })(),
    };
    hub.channels.set(this.#channel, channel);
    return (await channel.subscribed) ? hub : undefined;
  }

  /** Register interest in `key` now; announcements from here on wake the ticket. */
  async watch(key: string): Promise<Ticket> {
    const hub = await this.#hub;
    const watchers = hub?.channels.get(this.#channel)?.watchers;
    if (watchers === undefined) return new Ticket(() => {});
    let set = watchers.get(key);
    if (set === undefined) watchers.set(key, (set = new Set()));
    const ticket: Ticket = new Ticket(() => {
      set.delete(ticket);
      if (set.size === 0 && watchers.get(key) === set) watchers.delete(key);
    });
    set.add(ticket);
    return ticket;
  }

  /** Drop this cache's share of the subscription; the last one unsubscribes. */
  async close(): Promise<void> {
    this.#closed = true;
    const hub = await this.#hub;
    if (hub === undefined) return;
    const channel = hub.channels.get(this.#channel);
    if (channel === undefined || --channel.refs > 0) return;
    hub.channels.delete(this.#channel);
    if (hub.channels.size === 0) {
      hub.stop();
      hubs.delete(hub.client);
    }
    try {
      await hub.client.send(["UNSUBSCRIBE", this.#channel], { timeoutMs: 1000 });
    } catch {
      // The connection is closed or gone: the subscription went with it.
    }
  }
}
