/**
 * Tools for forcing a race instead of hoping for one: a promise the test
 * releases itself, a barrier that lets N callers go at once, one turn of the
 * event loop, polling for a real event (a server restart, a lease
 * expiring in Redis), never for a race, and a bound on an awaited event.
 */

/** A promise with its resolve and reject exposed, to hold a step until the test releases it. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Resolves `reached` once `n` parties have called `arrive()`; each `arrive()` resolves then too. */
export function barrier(
  n: number,
): { arrive(): Promise<void>; readonly reached: Promise<void>; readonly count: number } {
  const all = deferred();
  let count = 0;
  return {
    arrive() {
      if (++count >= n) all.resolve();
      return all.promise;
    },
    reached: all.promise,
    get count() {
      return count;
    },
  };
}

/** Let pending I/O and timers of the current moment run. */
export function tick(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

/** Poll `check` every `everyMs` until it returns true; throw after `withinMs`. For waiting on real events (a server restart), not for races. */
export async function until(check: () => boolean | Promise<boolean>, withinMs = 5000, everyMs = 10): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * `promise`, or a rejection naming `what` once `withinMs` passed: an awaited
 * event that never comes fails the test instead of hanging it. Its timer is
 * cleared as soon as `promise` settles, so it never outlives the test.
 */
export function within<T>(promise: Promise<T>, what: string, withinMs = 10_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${withinMs} ms`)), withinMs);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
