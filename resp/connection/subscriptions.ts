/**
 * Pub/sub bookkeeping shared by `RedisClient` and the cluster's
 * subscriber connection: which channels are subscribed (so a reconnect, or a
 * move to another cluster node, restores them: without that a lease waiter
 * would silently fall back to polling forever), how many confirmations an
 * (un)subscribe command gets, and how Redis' pub/sub frames look in RESP2
 * and RESP3.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import type { Arg, Reply } from "../types.ts";

const SUBSCRIBE_KINDS = new Set([
  "subscribe",
  "psubscribe",
  "ssubscribe",
  "unsubscribe",
  "punsubscribe",
  "sunsubscribe",
]);
const MESSAGE_KINDS = new Set(["message", "pmessage", "smessage"]);

/**
 * The channels (and patterns, and shard channels) one connection is
 * subscribed to, as the commands sent so far leave them.
 */
export class Subscriptions {
  /** Subscribed channels per kind ("subscribe", "psubscribe", "ssubscribe"), keyed by text, holding the argument as given (bytes stay bytes). */
  #channels = new Map<string, Map<string, Arg>>();

  /**
   * Record what `command` does to the subscriptions, and return how many
   * replies it gets: 1 for any other command; an (un)subscribe gets one
   * confirmation per channel.
   *
   * @param command a command about to be sent.
   * @returns how many replies Redis sends for it.
   */
  track(command: readonly Arg[]): number {
    const first = command[0];
    // Called for every command: a cheap screen before lowercasing. Every
    // (un)subscribe verb is 9 to 12 characters long and starts with s, p or u (any case).
    if (typeof first !== "string" || first.length < 9 || first.length > 12) return 1;
    const c0 = first.charCodeAt(0) | 0x20;
    if (c0 !== 0x73 && c0 !== 0x70 && c0 !== 0x75) return 1;
    const name = first.toLowerCase();
    if (!SUBSCRIBE_KINDS.has(name)) return 1;
    // "punsubscribe" and "sunsubscribe" carry their "un" after the kind's letter.
    const at = name.indexOf("un");
    const un = at === 0 || at === 1;
    const base = un ? name.slice(0, at) + name.slice(at + 2) : name;
    let set = this.#channels.get(base);
    if (set === undefined) this.#channels.set(base, set = new Map());
    // Redis confirms each channel once; an unsubscribe from everything
    // confirms each channel still subscribed (or once when there is none).
    const expect = un && command.length === 1 ? Math.max(1, set.size) : Math.max(1, command.length - 1);
    for (let i = 1; i < command.length; i++) {
      const channel = command[i]!;
      const key = typeof channel === "string"
        ? channel
        : channel instanceof Uint8Array
        ? `\0bytes:${Buffer.from(channel).toString("latin1")}`
        : String(channel);
      if (un) set.delete(key);
      else set.set(key, channel);
    }
    if (un && command.length === 1) set.clear();
    return expect;
  }

  /**
   * The commands that subscribe a fresh connection to everything this one
   * is subscribed to: one per kind, channels as they were given.
   *
   * @returns e.g. `[["SUBSCRIBE", "a", "b"], ["PSUBSCRIBE", "news.*"]]`; empty when there is nothing to restore.
   */
  restore(): Arg[][] {
    const commands: Arg[][] = [];
    for (const [kind, set] of this.#channels) if (set.size > 0) commands.push([kind.toUpperCase(), ...set.values()]);
    return commands;
  }
}

/**
 * True for the name of a command, or the kind of a frame, that
 * (un)subscribes: RESP3 confirms these with push frames, RESP2 with replies.
 *
 * @param kind a lower-case command name or frame kind.
 */
export function isSubscribeKind(kind: string): boolean {
  return SUBSCRIBE_KINDS.has(kind);
}

/**
 * True for a pub/sub message as RESP2 delivers it to a subscribed
 * connection: an ordinary array (`["message", channel, payload]`), which
 * must never be taken for the reply of the command at the head of the queue.
 *
 * @param value a top-level reply.
 */
export function isMessage(value: Reply): value is Reply[] {
  return Array.isArray(value) && typeof value[0] === "string" && MESSAGE_KINDS.has(value[0]);
}

/**
 * The subscription count a RESP2 (un)subscribe confirmation carries
 * (`["subscribe", channel, count]`), or -1 for any other reply. A RESP2
 * connection is in subscribed mode exactly while the last count is above 0.
 *
 * @param value a top-level reply.
 */
export function subscriptionCount(value: Reply): number {
  if (!Array.isArray(value) || typeof value[2] !== "number" || typeof value[0] !== "string") return -1;
  return SUBSCRIBE_KINDS.has(value[0]) ? value[2] : -1;
}
