/**
 * The cluster client's slow path: a command whose owner is unknown or
 * unreachable, or that got MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING or
 * MASTERDOWN, loops through (wait for a usable node) -> send -> classify the
 * error, within `maxRedirections`, the offline budget and its own timeout.
 * Internal to `client.ts`; not re-exported.
 *
 * @module
 */
import { ignore, onAbort } from "../shared/mod.ts";
import { commandName } from "../connection/mod.ts";
import type { ClusterNodes, Node } from "./nodes.ts";
import type { ResolvedClusterOptions } from "./options.ts";
import {
  ConnectionError,
  isConnectionError,
  isRedisReplyError,
  RedisReplyError,
  TimeoutError,
  timeoutMessage,
} from "../errors.ts";
import { type NodeAddress, parseEndpoint } from "./slot_map.ts";
import type { Arg, Reply, SendOptions } from "../types.ts";

/** Replies that mean "not now, nothing ran": the command is tried again after `retryDelayMs`. */
export const RETRYABLE: ReadonlySet<string> = new Set(["TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN"]);

/** The counters the loop updates, part of the client's `ClusterStats`. */
export interface RedirectStats {
  moved: number;
  asked: number;
  redirections: number;
  bounced: number;
  retried: number;
}

/** One command entering the slow path. */
export interface Redirected {
  readonly command: readonly Arg[];
  /** Its keys' slot, or -1 for a keyless command (any primary serves it). */
  readonly slot: number;
  readonly options: SendOptions | undefined;
  /** When it was issued, for the timeout's message; 0 when it has no timeout. */
  readonly startedAt: number;
  /** When its timeout runs out (`Infinity` for none), counted from the call across every retry. */
  readonly deadline: number;
  /** The setting that timeout comes from (`timeoutMs`, or the cluster's `commandTimeoutMs`), for the message. */
  readonly setting: string;
  /** That setting's value. */
  readonly timeoutMs: number;
  /** The error of the attempt already made on the fast path, classified first; undefined when none was made. */
  readonly error?: unknown;
  /** The node that attempt went to (a MOVED with an empty host means this node's host). */
  readonly failedOn?: Node | undefined;
}

/** A command's time in the offline budget: from its first wait on, it counts against `offlineQueue`. */
interface Wait {
  since: number;
  waiting: boolean;
}

/** Runs commands on the slow path; one for the client. */
export class Redirector {
  readonly #o: ResolvedClusterOptions;
  readonly #nodes: ClusterNodes;
  readonly #stats: RedirectStats;
  /** Commands waiting for the cluster to heal, bounded by `offlineQueue`. */
  #waiting = 0;
  #wakers = new Set<() => void>();

  /**
   * @param o the cluster's resolved options.
   * @param nodes the slot map and node connections to route with.
   * @param stats the counters this updates (`moved`, `asked`, `retried`).
   */
  constructor(o: ResolvedClusterOptions, nodes: ClusterNodes, stats: RedirectStats) {
    this.#o = o;
    this.#nodes = nodes;
    this.#stats = stats;
  }

  /** End every pause now: the map changed (each waiting command tries again), or the client is closing. */
  wake(): void {
    for (const wake of [...this.#wakers]) wake();
  }

  /**
   * Loop until `r.command` is answered or must fail.
   *
   * @returns its reply.
   * @throws {RedisReplyError} the server's error, or the last redirection's after `maxRedirections`.
   * @throws {ConnectionError} when it was written and the connection dropped, or no node could serve it in time.
   * @throws {TimeoutError} when its own timeout runs out.
   */
  async run(r: Redirected): Promise<Reply> {
    const wait: Wait = { since: 0, waiting: false };
    let error = r.error;
    let failedOn = r.failedOn;
    let redirections = 0;
    let ask: NodeAddress | undefined;
    // The node the last MOVED named: the command goes there, whatever the map
    // says meanwhile (a concurrent read may hold an older view), until that
    // node redirects it in turn or cannot be reached.
    let follow: NodeAddress | undefined;
    // Nodes that sent this command elsewhere: one of them naming another
    // again is two nodes disagreeing, waited out instead of bounced at once.
    const left = new Set<string>();
    try {
      for (;;) {
        if (error !== undefined) {
          const e = error;
          error = undefined;
          if (!isRedisReplyError(e)) {
            if (isConnectionError(e)) this.#nodes.requestRefresh();
            if (e instanceof TimeoutError && r.startedAt > 0) throw timeout(r, e);
            throw e; // written (or refused by the server): never sent again
          }
          if (e.code === "MOVED" || e.code === "ASK") {
            if (++redirections > this.#o.maxRedirections) {
              throw new RedisReplyError(
                `${e.message} (gave up after ${this.#o.maxRedirections} redirections: maxRedirections)`,
                { cause: e },
              );
            }
            const [, slotText, endpoint] = e.message.split(" ");
            const target = parseEndpoint(endpoint ?? "", failedOn?.address.host ?? "127.0.0.1");
            if (target === undefined) throw e;
            this.#stats.redirections++;
            const back = left.has(target.id);
            if (failedOn !== undefined) left.add(failedOn.address.id);
            if (e.code === "MOVED") {
              this.#stats.moved++;
              this.#nodes.learn(Number(slotText), target);
              follow = target;
              // The node a MOVED points to has the newest view of that slot: ask it first.
              this.#nodes.requestRefresh(target.id);
            } else {
              this.#stats.asked++;
              ask = target;
            }
            if (back) {
              // Sent back to a node that already sent it away: the nodes
              // disagree until gossip settles the slot; bouncing at once would
              // spend maxRedirections in a few milliseconds.
              this.#stats.bounced++;
              await this.#sleep(r, this.#o.retryDelayMs);
            }
          } else if (RETRYABLE.has(e.code)) {
            this.#stats.retried++;
            if (e.code !== "TRYAGAIN") {
              follow = undefined;
              this.#nodes.requestRefresh();
            }
            await this.#pause(r, wait, e);
          } else {
            throw e;
          }
        }
        if (this.#nodes.closed) throw new ConnectionError("The cluster client is closed");
        if (r.options?.signal?.aborted) throw r.options.signal.reason;
        if (Date.now() >= r.deadline) throw timeout(r, undefined);
        if (follow !== undefined && ask === undefined && !this.#nodes.node(follow.id, follow)?.client.connected) {
          follow = undefined; // unreachable: the map (re-read meanwhile) decides
        }
        const id = ask?.id ?? follow?.id ?? this.#nodes.owner(r.slot);
        const node = id === undefined ? undefined : this.#nodes.node(id, ask ?? follow);
        if (node === undefined || !node.client.connected) {
          this.#stats.retried++;
          this.#nodes.requestRefresh();
          await this.#pause(r, wait, this.#nodes.lastRefreshError);
          continue;
        }
        const sendOptions: SendOptions = {
          signal: r.options?.signal,
          buffers: r.options?.buffers,
          onAttribute: r.options?.onAttribute,
          bytesPerMs: r.options?.bytesPerMs,
          timeoutMs: r.deadline === Infinity ? 0 : Math.max(1, r.deadline - Date.now()),
        };
        // ASKING and the command leave in the same write (automatic pipelining):
        // ASKING only covers the very next command on that connection.
        if (ask !== undefined) node.client.send(["ASKING"]).catch(ignore);
        ask = undefined;
        try {
          return await node.client.send(r.command, sendOptions);
        } catch (e) {
          error = e;
          failedOn = node;
        }
      }
    } finally {
      if (wait.waiting) this.#waiting--;
    }
  }

  // Wait `retryDelayMs` (less if the deadline is nearer) for the cluster to heal, within the offline budget.
  async #pause(r: Redirected, wait: Wait, cause: unknown): Promise<void> {
    const now = Date.now();
    if (!wait.waiting) {
      if (this.#waiting >= this.#o.offlineQueue) {
        throw new ConnectionError(
          this.#o.offlineQueue === 0
            ? `No node can serve ${describe(r)} now (offlineQueue is off)`
            : `The cluster's offline queue is full (${this.#o.offlineQueue} commands)`,
          { cause },
        );
      }
      this.#waiting++;
      wait.waiting = true;
      wait.since = now;
    }
    const budget = this.#o.offlineTimeoutMs === 0 ? Infinity : wait.since + this.#o.offlineTimeoutMs;
    if (now >= budget) {
      throw new ConnectionError(`No node could serve ${describe(r)} for ${now - wait.since} ms (offlineTimeoutMs)`, {
        cause,
      });
    }
    if (now >= r.deadline) throw timeout(r, undefined);
    await this.#sleep(r, Math.min(this.#o.retryDelayMs, budget - now));
  }

  // Wait `ms` (less if the deadline is nearer); a new map, close() or an abort ends it early.
  async #sleep(r: Redirected, ms: number): Promise<void> {
    ms = Math.min(ms, r.deadline - Date.now());
    if (ms <= 0) return;
    // An abort ends the pause early; the loop then throws its reason.
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stop();
        this.#wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      const stop = onAbort(r.options?.signal, done);
      this.#wakers.add(done);
    });
  }
}

function timeout(r: Redirected, cause: unknown): TimeoutError {
  return new TimeoutError(
    timeoutMessage(`Command ${commandName(r.command[0])}`, r.setting, r.timeoutMs),
    Date.now() - r.startedAt,
    { setting: r.setting, timeoutMs: r.timeoutMs, ...(cause === undefined ? {} : { cause }) },
  );
}

function describe(r: Redirected): string {
  return r.slot >= 0 ? `${commandName(r.command[0])} (slot ${r.slot})` : commandName(r.command[0]);
}
