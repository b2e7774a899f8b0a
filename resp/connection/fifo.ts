/**
 * A first-in first-out queue on a growable ring buffer: `shift()` is O(1),
 * unlike `Array#shift()`, which copies the array once it grows past V8's fast
 * path (10,000 replies in flight would be quadratic).
 */
export class Fifo<T> {
  #items: (T | undefined)[] = new Array(16);
  #head = 0;
  #size = 0;

  get length(): number {
    return this.#size;
  }

  push(item: T): void {
    const items = this.#items;
    if (this.#size === items.length) {
      const grown: (T | undefined)[] = new Array(items.length * 2);
      for (let i = 0; i < this.#size; i++) grown[i] = items[(this.#head + i) & (items.length - 1)];
      this.#items = grown;
      this.#head = 0;
    }
    this.#items[(this.#head + this.#size++) & (this.#items.length - 1)] = item;
  }

  shift(): T | undefined {
    if (this.#size === 0) return undefined;
    const items = this.#items;
    const item = items[this.#head];
    items[this.#head] = undefined;
    this.#head = (this.#head + 1) & (items.length - 1);
    this.#size--;
    return item;
  }

  peek(): T | undefined {
    return this.#size === 0 ? undefined : this.#items[this.#head];
  }

  /** The item `index` places behind the head. */
  at(index: number): T | undefined {
    if (index < 0 || index >= this.#size) return undefined;
    return this.#items[(this.#head + index) & (this.#items.length - 1)];
  }
}
