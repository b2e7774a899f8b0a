/**
 * A fake wall clock and a fake sleep for the recipes' tests: every sleep is
 * recorded with its duration and held until the test releases it (or, in
 * `auto` mode, let go on the next turn of the event loop), so a poll loop,
 * a backoff or a deadline advances exactly when the test says.
 */

/** One sleep a recipe asked for. */
export interface HeldSleep {
  readonly ms: number;
  release(): void;
}

/** The fake clocks: `now()` moves only by `advance()`. */
export interface FakeTime {
  now(): number;
  advance(ms: number): void;
  sleep(ms: number): Promise<void>;
  /** Every duration asked for, in order. */
  readonly asked: number[];
  /** Sleeps still held. */
  readonly held: HeldSleep[];
  /** Release every held sleep whose duration matches `which` (all by default); returns how many. */
  release(which?: (ms: number) => boolean): number;
  /** From now on, sleeps matching `which` end on the next turn without being held. */
  auto(which: (ms: number) => boolean): void;
}

/** A fake time starting at a fixed wall-clock instant. */
export function fakeTime(start = 1_700_000_000_000): FakeTime {
  let wall = start;
  const asked: number[] = [];
  const held: HeldSleep[] = [];
  let free: (ms: number) => boolean = () => false;
  return {
    now: () => wall,
    advance: (ms) => void (wall += ms),
    asked,
    held,
    sleep(ms) {
      asked.push(ms);
      if (free(ms)) return new Promise((resolve) => setImmediate(resolve));
      return new Promise((resolve) => held.push({ ms, release: () => resolve() }));
    },
    release(which = () => true) {
      const go = held.filter((h) => which(h.ms));
      for (const h of go) held.splice(held.indexOf(h), 1);
      for (const h of go) h.release();
      return go.length;
    },
    auto(which) {
      free = which;
    },
  };
}
