import { clearTimeout, setTimeout } from "node:timers";

/**
 * One timer for many deadlines: a min-heap of items ordered by `deadline`,
 * with a single `setTimeout` armed for the earliest. A per-command timer (or
 * an `AbortSignal.timeout()` per command) is what made node-redis v6 several
 * times slower than v5; this costs one heap push per timed command and
 * nothing for commands without a timeout.
 *
 * Settled items are not removed eagerly: they are skipped when they reach the
 * top (`isDue` decides), which keeps the hot path free of heap deletions.
 */
export interface Deadline {
  deadline: number;
}

export class Deadlines<T extends Deadline> {
  #heap: T[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #armedFor = Infinity;
  readonly #onDue: (item: T) => void;

  /** `onDue` is called for each item whose deadline has passed, earliest first. */
  constructor(onDue: (item: T) => void) {
    this.#onDue = onDue;
  }

  get size(): number {
    return this.#heap.length;
  }

  add(item: T): void {
    const heap = this.#heap;
    let i = heap.push(item) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent]!;
      if (p.deadline <= item.deadline) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = item;
    if (item.deadline < this.#armedFor) this.#arm(item.deadline);
  }

  /** Forget every item and the timer. */
  clear(): void {
    this.#heap.length = 0;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Infinity;
  }

  #arm(deadline: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#armedFor = deadline;
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, deadline - Date.now()));
    // A deadline alone must not keep a process alive; the socket does that while replies are due.
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#armedFor = Infinity;
    const now = Date.now();
    const heap = this.#heap;
    while (heap.length > 0 && heap[0]!.deadline <= now) this.#onDue(this.#pop());
    if (heap.length > 0) this.#arm(heap[0]!.deadline);
  }

  #pop(): T {
    const heap = this.#heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    const n = heap.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && heap[r]!.deadline < heap[l]!.deadline ? r : l;
        if (heap[c]!.deadline >= last.deadline) break;
        heap[i] = heap[c]!;
        i = c;
      }
      heap[i] = last;
    }
    return top;
  }
}
