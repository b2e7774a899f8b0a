/**
 * The keys of recently used identities, derived once and remembered: a get
 * of a hot identity pays a lookup instead of a SHA-256. A string identity is
 * one map lookup; a tuple is looked up part by part in a trie of maps, so no
 * text is built (and hashed) per call. Two identities share a slot exactly
 * when `keysFor` gives them the same keys: a map tells the string "1" from
 * the number 1, and takes -0 for 0 as `keysFor` does.
 *
 * Bounded in entries and in the characters of the identities it keeps
 * ({@linkcode MEMO_BYTES}), evicting one entry at a time (CLOCK, second
 * chance) rather than starting over when full, so a working set larger than
 * the bound still finds its hot identities remembered. An identity longer
 * than {@linkcode MAX_REMEMBERED_CHARS} is never kept: it is derived anew
 * at each call (a SHA-256 of what is already a kilobyte), and a megabyte
 * identity costs no memory past its call.
 *
 * @module
 */
import type { Identity } from "../../types.ts";
import { keysFor } from "./keys.ts";
import type { Entry } from "../../contract.ts";
import type { SharedKeys } from "./reader.ts";

/** The longest identity remembered, in characters (a tuple: its strings' characters, 8 per number). */
export const MAX_REMEMBERED_CHARS = 1024;
/** The most the remembered identities and their keys hold, in characters (about twice that in bytes). */
export const MEMO_BYTES = 8 * 1024 * 1024;
/** What a slot costs besides its characters, in characters: its objects and map entries. */
const SLOT_OVERHEAD = 96;

type Part = string | number;

/** One node of the tuple trie: the slot of the tuple ending here, and the parts that go on. */
interface Node {
  slot: Slot | undefined;
  next: Map<Part, Node> | undefined;
  readonly parent: Node | undefined;
  readonly part: Part | undefined;
}

/**
 * One remembered derivation, which is also the keys handed out: one object
 * per identity, not a slot around a keys object. It keeps the data key only
 * (the near tier's key, the same string): the lease key, wanted only when a
 * call loads, is derived when asked for. `visited` is its second chance;
 * `reading` the read of its key in flight, which the reader hangs here.
 */
class Slot implements SharedKeys {
  readonly data: string;
  visited = false;
  reading: Promise<Entry | undefined> | undefined = undefined;
  readingSince = 0;
  /** Where it is remembered: a string identity's text, or a tuple's trie node. */
  readonly at: string | Node;
  /** What it counts against {@linkcode MEMO_BYTES}. */
  readonly chars: number;

  constructor(data: string, at: string | Node, chars: number) {
    this.data = data;
    this.at = at;
    this.chars = chars;
  }

  get lease(): string {
    return leaseKey(this.data);
  }
}

/** The lease key beside `data`: `<namespace>:{<digest>}:data` -> `<namespace>:{<digest>}:lease`. */
function leaseKey(data: string): string {
  return `${data.slice(0, -"data".length)}lease`;
}

/** Identity to keys, remembered for up to `size` identities. */
export class KeyMemo {
  readonly #namespace: string;
  readonly #size: number;
  readonly #maxChars: number;
  readonly #strings = new Map<string, Slot>();
  readonly #tuples: Node = { slot: undefined, next: undefined, parent: undefined, part: undefined };
  /** Every slot, oldest first: the CLOCK hand walks from the front. */
  readonly #ring = new Set<Slot>();
  #chars = 0;

  /**
   * @param namespace the cache's namespace.
   * @param size the most identities remembered.
   * @param maxChars the most characters they and their keys hold.
   */
  constructor(namespace: string, size: number, maxChars: number = MEMO_BYTES) {
    this.#namespace = namespace;
    this.#size = size;
    this.#maxChars = maxChars;
  }

  /** Identities remembered now. */
  get size(): number {
    return this.#ring.size;
  }

  /** Characters the remembered identities and their keys hold now. */
  get chars(): number {
    return this.#chars;
  }

  /** Nodes of the tuple trie now (walked: for tests of its pruning). */
  get trieNodes(): number {
    let count = 0;
    const walk = (node: Node) => {
      for (const next of node.next?.values() ?? []) {
        count++;
        walk(next);
      }
    };
    walk(this.#tuples);
    return count;
  }

  /** The keys of `identity`, derived at most once while it is remembered. */
  keys(identity: Identity): SharedKeys {
    if (typeof identity === "string") {
      const slot = this.#strings.get(identity);
      if (slot !== undefined) {
        slot.visited = true;
        return slot;
      }
      return this.#remember(identity, identity, identity.length);
    }
    if (!Array.isArray(identity) || identity.length === 0) return keysFor(this.#namespace, identity) as never;
    let node = this.#tuples;
    let chars = 0;
    for (let i = 0; i < identity.length; i++) {
      const part = identity[i];
      // Not a valid part: keysFor throws the error that names it.
      if (typeof part === "string") chars += part.length;
      else if (typeof part === "number" && Number.isFinite(part)) chars += 8;
      else return keysFor(this.#namespace, identity) as never;
      const next: Node | undefined = node.next?.get(part);
      if (next === undefined) return this.#rememberTuple(identity, node, i, chars);
      node = next;
    }
    const slot = node.slot;
    if (slot === undefined) return this.#rememberTuple(identity, node, identity.length, chars);
    slot.visited = true;
    return slot;
  }

  // A tuple not remembered: its remaining parts are walked (and counted),
  // then its slot is made, unless it is too long to keep.
  #rememberTuple(tuple: readonly Part[], node: Node, from: number, chars: number): SharedKeys {
    for (let i = from; i < tuple.length; i++) {
      const part = tuple[i];
      if (typeof part === "string") chars += part.length;
      else if (typeof part === "number" && Number.isFinite(part)) chars += 8;
      else return keysFor(this.#namespace, tuple) as never;
    }
    if (chars > MAX_REMEMBERED_CHARS) return this.#unremembered(tuple);
    for (let i = from; i < tuple.length; i++) {
      const part = tuple[i]!;
      const next: Node = { slot: undefined, next: undefined, parent: node, part };
      (node.next ??= new Map()).set(part, next);
      node = next;
    }
    return this.#remember(tuple, node, chars);
  }

  #remember(identity: Identity, at: string | Node, chars: number): SharedKeys {
    if (chars > MAX_REMEMBERED_CHARS) return this.#unremembered(identity);
    const data = keysFor(this.#namespace, identity).data;
    const slot = new Slot(data, at, chars + data.length + SLOT_OVERHEAD);
    this.#chars += slot.chars;
    while (this.#ring.size >= this.#size || this.#chars > this.#maxChars) {
      if (!this.#evict()) break;
    }
    if (typeof at === "string") this.#strings.set(at, slot);
    else at.slot = slot;
    this.#ring.add(slot);
    return slot;
  }

  // Keys for one call, kept nowhere (a trie node made for it is pruned).
  #unremembered(identity: Identity): SharedKeys {
    const keys = new Slot(keysFor(this.#namespace, identity).data, "", 0);
    return keys;
  }

  // The oldest slot not used since the hand last passed it leaves; a used
  // one goes to the back with its bit cleared. False when nothing is left.
  #evict(): boolean {
    for (const slot of this.#ring) {
      this.#ring.delete(slot);
      if (slot.visited) {
        slot.visited = false;
        this.#ring.add(slot);
        continue;
      }
      this.#forget(slot);
      return true;
    }
    return false;
  }

  #forget(slot: Slot): void {
    this.#chars -= slot.chars;
    const at = slot.at;
    if (typeof at === "string") {
      this.#strings.delete(at);
      return;
    }
    at.slot = undefined;
    // Prune the nodes no tuple goes through any more.
    let node: Node = at;
    while (node.parent !== undefined && node.slot === undefined && (node.next === undefined || node.next.size === 0)) {
      node.parent.next!.delete(node.part!);
      node = node.parent;
    }
  }
}
