import { clearTimeout, setTimeout } from "node:timers";

/**
 * One timer for many deadlines: a min-heap of items ordered by `deadline`,
 * with a single `setTimeout` armed for the earliest. A per-command timer (or
 * an `AbortSignal.timeout()` per command) is what made node-redis v6 several
 * times slower than v5; this costs one heap push per timed command and
 * nothing for commands without a timeout.
 *
 * Items record their position (`heapIndex`) so a command answered long
 * before its deadline leaves the heap at once: otherwise every answered
 * command (its arguments, its reply) would stay reachable until its deadline.
 */
/** The largest delay setTimeout takes as such (2^31 - 1 ms); beyond it, Node fires after 1 ms. */
const MAX_DELAY = 2 ** 31 - 1;

export interface Deadline {
  deadline: number;
  /** Position in the heap, or -1 when not in it. Maintained by {@linkcode Deadlines}. */
  heapIndex: number;
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
    item.heapIndex = this.#heap.push(item) - 1;
    this.#up(item.heapIndex);
    if (item.deadline < this.#armedFor) this.#arm(item.deadline);
  }

  /** Take `item` out (it was settled before its deadline). The timer stays armed; firing early for nothing is cheaper than re-arming. */
  remove(item: T): void {
    const i = item.heapIndex;
    if (i < 0) return;
    item.heapIndex = -1;
    const heap = this.#heap;
    const last = heap.pop()!;
    if (i === heap.length) return;
    heap[i] = last;
    last.heapIndex = i;
    this.#down(i);
    this.#up(last.heapIndex);
  }

  /**
   * Move `item`'s deadline later, to `deadline` (it must be in the heap). The
   * timer stays armed for the earlier time: firing once early for nothing is
   * cheaper than re-arming, and it re-arms for what is then first.
   */
  postpone(item: T, deadline: number): void {
    if (item.heapIndex < 0 || deadline <= item.deadline) return;
    item.deadline = deadline;
    this.#down(item.heapIndex);
  }

  /** Forget every item and the timer. */
  clear(): void {
    for (const item of this.#heap) item.heapIndex = -1;
    this.#heap.length = 0;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Infinity;
  }

  #arm(deadline: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#armedFor = deadline;
    // Capped at setTimeout's largest delay (about 24.8 days): a longer one fires at once, again and again.
    this.#timer = setTimeout(() => this.#fire(), Math.min(MAX_DELAY, Math.max(0, deadline - Date.now())));
    // A deadline alone must not keep a process alive; the socket does that while replies are due.
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#armedFor = Infinity;
    const now = Date.now();
    const heap = this.#heap;
    while (heap.length > 0 && heap[0]!.deadline <= now) {
      const top = heap[0]!;
      this.remove(top);
      this.#onDue(top);
    }
    if (heap.length > 0) this.#arm(heap[0]!.deadline);
  }

  #up(i: number): void {
    const heap = this.#heap;
    const item = heap[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent]!;
      if (p.deadline <= item.deadline) break;
      heap[i] = p;
      p.heapIndex = i;
      i = parent;
    }
    heap[i] = item;
    item.heapIndex = i;
  }

  #down(i: number): void {
    const heap = this.#heap;
    const n = heap.length;
    const item = heap[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && heap[r]!.deadline < heap[l]!.deadline ? r : l;
      const child = heap[c]!;
      if (child.deadline >= item.deadline) break;
      heap[i] = child;
      child.heapIndex = i;
      i = c;
    }
    heap[i] = item;
    item.heapIndex = i;
  }
}
