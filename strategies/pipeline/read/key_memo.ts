/**
 * The keys of recently used identities, derived once and remembered: a get
 * of a hot identity pays a map lookup instead of a SHA-256. Bounded, and
 * evicting one entry at a time (CLOCK, second chance) rather than starting
 * over when full, so a working set larger than the bound still finds its hot
 * identities remembered.
 *
 * @module
 */
import type { Identity } from "../../types.ts";
import { keysFor } from "./keys.ts";
import type { Read, SharedKeys } from "./reader.ts";

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
  reading: Promise<Read> | undefined = undefined;
  readingSince = 0;

  constructor(data: string) {
    this.data = data;
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
  // Strings and tuples in maps of their own: the tuple ["a"] is remembered
  // under a text that a string identity may equal.
  readonly #strings = new Map<string, Slot>();
  readonly #tuples = new Map<string, Slot>();

  constructor(namespace: string, size: number) {
    this.#namespace = namespace;
    this.#size = size;
  }

  /** Identities remembered now. */
  get size(): number {
    return this.#strings.size + this.#tuples.size;
  }

  /** The keys of `identity`, derived at most once while it is remembered. */
  keys(identity: Identity): SharedKeys {
    let map: Map<string, Slot>;
    let text: string | undefined;
    if (typeof identity === "string") {
      map = this.#strings;
      text = identity;
    } else {
      map = this.#tuples;
      text = tupleText(identity);
      // Not a valid tuple: keysFor throws the error that names it.
      if (text === undefined) return new Slot(keysFor(this.#namespace, identity).data);
    }
    let slot = map.get(text);
    if (slot !== undefined) {
      slot.visited = true;
      return slot;
    }
    // The same object goes to every caller of this identity (typed read-only).
    slot = new Slot(keysFor(this.#namespace, identity).data);
    if (this.size >= this.#size) this.#evict();
    map.set(text, slot);
    return slot;
  }

  // The oldest entry (of the fuller map) not used since it was last passed
  // over leaves; a used one goes to the back with its bit cleared (Map order
  // is insertion order).
  #evict(): void {
    const map = this.#strings.size >= this.#tuples.size ? this.#strings : this.#tuples;
    for (;;) {
      const first = map.entries().next();
      if (first.done === true) return;
      const [text, slot] = first.value;
      map.delete(text);
      if (!slot.visited) return;
      slot.visited = false;
      map.set(text, slot);
    }
  }
}

/**
 * A text for a tuple identity that two tuples share exactly when
 * {@linkcode keysFor} gives them the same keys: each string as its length, a
 * colon and its code units (lone surrogates included: strings are compared
 * by code unit, as keysFor feeds them), each number as `n`, its decimal form
 * and a semicolon (`-0` reads "0", as keysFor feeds it). `undefined` when a
 * part is neither (keysFor then throws).
 */
export function tupleText(tuple: Identity): string | undefined {
  if (!Array.isArray(tuple) || tuple.length === 0) return undefined;
  let text = "";
  for (let i = 0; i < tuple.length; i++) {
    const part = tuple[i];
    if (typeof part === "string") text += `${part.length}:${part}`;
    else if (typeof part === "number" && Number.isFinite(part)) text += `n${part};`;
    else return undefined;
  }
  return text;
}
