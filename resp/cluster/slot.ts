/**
 * Redis Cluster key slots, public side: the slot of a key, and the error a
 * cluster client raises for a command whose keys span slots.
 *
 * @module
 */
import { brand, hasBrand } from "../shared/mod.ts";
import { keySlot as slotOf } from "./crc16.ts";
import type { Arg } from "../types.ts";

/**
 * The keys of one command hash to different slots, so no single node can
 * run it. Raised before anything is sent. `code` is `"CROSSSLOT"`, as the
 * server's own reply would say.
 *
 * @example Give related keys a shared hash tag
 * ```ts
 * import { connectCluster, isCrossSlotError } from "@herdless/herdless";
 * const seeds = (process.env.REDIS_CLUSTER_SEEDS ?? "redis://127.0.0.1:7000").split(",");
 * const cluster = await connectCluster(seeds);
 * await cluster.send(["MGET", "a", "b"]).catch((e) => console.log(isCrossSlotError(e))); // true
 * await cluster.send(["MGET", "{user:1}:a", "{user:1}:b"]); // one slot: fine
 * await cluster.close();
 * ```
 */
export class CrossSlotError extends Error {
  /** Always `"CROSSSLOT"`, as the server's own reply would say. */
  readonly code = "CROSSSLOT";
  /** The command's name, upper case. */
  readonly command: string;
  /** Two keys of the command that hash to different slots. */
  readonly keys: readonly [Arg, Arg];
  /** Their slots, in the same order. */
  readonly slots: readonly [number, number];
  /**
   * The error for `command`, naming two of its keys and their slots.
   *
   * @param command the command's name.
   * @param keys two keys of it in different slots.
   * @param slots their slots.
   */
  constructor(command: string, keys: [Arg, Arg], slots: [number, number]) {
    super(
      `Cannot send ${command}: its keys hash to different slots (${showKey(keys[0])} -> ${slots[0]}, ${
        showKey(keys[1])
      } -> ${slots[1]}); ` +
        "give keys used together a shared {hash tag}",
    );
    this.name = "CrossSlotError";
    brand(this, "CrossSlotError");
    this.command = command;
    this.keys = keys;
    this.slots = slots;
  }
}

/**
 * True when `e` is a {@linkcode CrossSlotError} from any copy of herdless
 * (a Deno copy and an npm copy of the package can both be loaded).
 *
 * @param e anything caught.
 * @returns whether it is a cross-slot error (then `e.keys` and `e.slots` are there).
 * @example Check for one
 * ```ts
 * import { CrossSlotError, isCrossSlotError } from "@herdless/herdless";
 * console.log(isCrossSlotError(new CrossSlotError("MGET", ["a", "b"], [15495, 3300]))); // true
 * ```
 */
export function isCrossSlotError(e: unknown): e is CrossSlotError {
  return hasBrand(e, "CrossSlotError");
}

/**
 * The cluster slot (0..16383) of a key: CRC16 of the key, or of its hash tag
 * (the part between the first `{` and the next `}`, when not empty).
 *
 * @param key a key, as a command would carry it.
 * @returns its slot.
 * @throws {TypeError} when `key` is not a string, number or Uint8Array.
 * @example Keys that share a hash tag share a slot
 * ```ts
 * import { keySlot } from "@herdless/herdless";
 * console.log(keySlot("foo")); // 12182
 * console.log(keySlot("{user:1}:profile") === keySlot("{user:1}:lease")); // true
 * ```
 */
export function keySlot(key: Arg): number {
  if (typeof key !== "string" && typeof key !== "number" && !(key instanceof Uint8Array)) {
    throw new TypeError(`Cannot compute keySlot: 'key' must be a string, number or Uint8Array, got ${typeof key}`);
  }
  return slotOf(key);
}

/** A key as an error message shows it: quoted and cut short, or its byte count. */
function showKey(key: Arg): string {
  if (key instanceof Uint8Array) return `<${key.length} bytes>`;
  const s = String(key);
  return JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}...` : s);
}
