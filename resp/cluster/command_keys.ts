/**
 * Which arguments of a command are keys, for routing in a cluster. Covers
 * the commands herdless and common callers use; any other command is routed
 * by its first argument (the rule most Redis commands follow), except those
 * listed as keyless, which any node can answer.
 *
 * @module
 */
import { CrossSlotError } from "./slot.ts";
import { keySlot } from "./crc16.ts";
import type { Arg } from "../types.ts";

/** How a command's keys are found. */
type Spec =
  | { kind: "none" }
  | { kind: "refuse"; why: string }
  /** Keys from `first`, every `step`th, up to `length - last` (exclusive). */
  | { kind: "range"; first: number; step: number; last: number }
  /** A count at `at`, then that many keys right after it; with `dest`, the argument at 1 is a key too. */
  | { kind: "numkeys"; at: number; dest?: boolean }
  /** Keys at `at` and, when present, at `also`. */
  | { kind: "fixed"; at: number; also?: number }
  /** `XREAD ... STREAMS k1 k2 id1 id2`: the keys are the first half after STREAMS. */
  | { kind: "streams" };

const NONE: Spec = { kind: "none" };
const FIRST: Spec = { kind: "fixed", at: 1 };
const ALL: Spec = { kind: "range", first: 1, step: 1, last: 0 };

const SPECS = new Map<string, Spec>();
const set = (names: string, spec: Spec) => {
  for (const n of names.split(" ")) SPECS.set(n, spec);
};

// Answered by any node (or per node, like SCAN and KEYS: the caller then sees one node's share).
set(
  "ping echo publish subscribe unsubscribe psubscribe punsubscribe info time dbsize lastsave role " +
    "script function cluster client config command hello auth select readonly readwrite asking " +
    "flushall flushdb randomkey keys scan wait waitaof acl debug latency slowlog module save bgsave " +
    "bgrewriteaof quit reset shutdown swapdb monitor pubsub failover replicaof slaveof lolwut",
  NONE,
);
// A transaction must stay on one connection to one node; the cluster client
// multiplexes every caller over shared connections, so it cannot offer one.
set("multi exec discard watch unwatch", {
  kind: "refuse",
  why: "transactions need a dedicated connection to one node, which a ClusterClient does not offer (use a Lua script)",
});
set("mget del unlink exists touch sinter sunion sdiff sinterstore sunionstore sdiffstore pfcount pfmerge", ALL);
set("mset msetnx", { kind: "range", first: 1, step: 2, last: 0 });
set("blpop brpop bzpopmin bzpopmax", { kind: "range", first: 1, step: 1, last: 1 });
set("eval evalsha eval_ro evalsha_ro fcall fcall_ro", { kind: "numkeys", at: 2 });
set("zunion zinter zdiff sintercard lmpop zmpop", { kind: "numkeys", at: 1 });
set("blmpop bzmpop", { kind: "numkeys", at: 2 });
set("rename renamenx smove lmove blmove rpoplpush brpoplpush copy geosearchstore zrangestore lcs", {
  kind: "fixed",
  at: 1,
  also: 2,
});
set("zunionstore zinterstore zdiffstore", { kind: "numkeys", at: 2, dest: true });
// OBJECT ENCODING key, MEMORY USAGE key; their other subcommands take no key.
set("object memory", { kind: "fixed", at: 2 });
set("xread xreadgroup", { kind: "streams" });
set("spublish", FIRST);
set("ssubscribe sunsubscribe", {
  kind: "refuse",
  why: "sharded pub/sub needs a subscriber connection per shard, which a ClusterClient does not offer (use SUBSCRIBE)",
});

/**
 * The keys of a command, or `undefined` when it has none (any node will do).
 *
 * @throws {TypeError} when the command cannot run through a cluster client.
 */
export function commandKeys(command: readonly Arg[]): Arg[] | undefined {
  const head = command[0];
  const name = typeof head === "string" ? head.toLowerCase() : "";
  const spec = SPECS.get(name) ?? (command.length > 1 ? FIRST : NONE);
  switch (spec.kind) {
    case "none":
      return undefined;
    case "refuse":
      throw new TypeError(`Cannot send ${name.toUpperCase()} through a ClusterClient: ${spec.why}`);
    case "fixed": {
      const keys: Arg[] = [];
      if (spec.at < command.length) keys.push(command[spec.at]!);
      if (spec.also !== undefined && spec.also < command.length) keys.push(command[spec.also]!);
      return keys.length === 0 ? undefined : keys;
    }
    case "range": {
      const keys: Arg[] = [];
      for (let i = spec.first; i < command.length - spec.last; i += spec.step) keys.push(command[i]!);
      return keys.length === 0 ? undefined : keys;
    }
    case "numkeys": {
      const keys = numkeys(command, spec.at);
      if (spec.dest !== true) return keys;
      return command.length > 1 ? [command[1]!, ...(keys ?? [])] : undefined;
    }
    case "streams": {
      let at = -1;
      for (let i = 1; i < command.length; i++) {
        const a = command[i];
        if (typeof a === "string" && a.toLowerCase() === "streams") {
          at = i;
          break;
        }
      }
      if (at === -1) return undefined;
      const rest = command.length - at - 1;
      return rest < 2 ? undefined : command.slice(at + 1, at + 1 + Math.floor(rest / 2));
    }
  }
}

// A count that is not a small non-negative integer, or runs past the end, is
// left for the server to refuse: any node gives the same error.
function numkeys(command: readonly Arg[], at: number): Arg[] | undefined {
  const raw = command[at];
  const n = typeof raw === "number" ? raw : typeof raw === "string" && /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n <= 0 || at + n >= command.length) return undefined;
  return command.slice(at + 1, at + 1 + n);
}

/**
 * The key a command is routed by, or `undefined` when any node will do: how
 * a foreign cluster client (node-redis') is told where to send it. A command
 * a ClusterClient refuses is routed by its first argument, as that client
 * would.
 */
export function firstKey(command: readonly Arg[]): Arg | undefined {
  const head = command[0];
  if (typeof head === "string" && SPECS.get(head.toLowerCase())?.kind === "refuse") return command[1];
  return commandKeys(command)?.[0];
}

/** The slot a command must go to, or -1 when any node will do. */
export function routeSlot(command: readonly Arg[]): number {
  const keys = commandKeys(command);
  if (keys === undefined) return -1;
  let slot = -1;
  let firstKey: Arg | undefined;
  for (const key of keys) {
    // A bad argument is left for the node client to refuse with its own TypeError.
    if (typeof key !== "string" && typeof key !== "number" && !(key instanceof Uint8Array)) return -1;
    const s = keySlot(key);
    if (slot === -1) {
      slot = s;
      firstKey = key;
    } else if (s !== slot) {
      throw new CrossSlotError(String(command[0]).toUpperCase(), [firstKey!, key], [slot, s]);
    }
  }
  return slot;
}
