/**
 * Listening to an `AbortSignal`, in one place. Every wait of both layers (a
 * command's signal, a caller's deadline, a lease waiter, a queued load)
 * hangs its listener here, so the listener is always removed the same way.
 * A call without a signal or timeout passes `undefined`, which costs nothing:
 * there is no shared never-aborting signal, since workerd builds no
 * AbortController at module scope and ties every signal to the request that
 * made it (another request touching it throws).
 *
 * @module
 */

const nothing = () => {};

/**
 * Call `listener` once when `signal` aborts. Returns the function that stops
 * listening (call it when the wait ends another way). A signal that is
 * `undefined` costs nothing; one already aborted is the
 * caller's to check first: the listener is not called for it.
 */
export function onAbort(signal: AbortSignal | undefined, listener: () => void): () => void {
  if (signal === undefined || signal.aborted) return nothing;
  signal.addEventListener("abort", listener, { once: true });
  return () => signal.removeEventListener("abort", listener);
}

/**
 * Listen for `signal`'s abort with `listener` until {@linkcode unlistenAbort}:
 * the form for a hot path, where the stop function {@linkcode onAbort}
 * returns would be one more closure per call (a command passes itself, an
 * object with `handleEvent`, so a command with a signal costs no closure at
 * all). Returns whether it listens: not for `undefined` or a
 * signal already aborted (the caller's to check first).
 */
export function listenAbort(signal: AbortSignal | undefined, listener: EventListenerObject): boolean {
  if (signal === undefined || signal.aborted) return false;
  signal.addEventListener("abort", listener, { once: true });
  return true;
}

/** Stop a listener added by {@linkcode listenAbort}. */
export function unlistenAbort(signal: AbortSignal, listener: EventListenerObject): void {
  signal.removeEventListener("abort", listener);
}

/**
 * Settle with `promise`, or reject with `signal.reason` as soon as `signal`
 * aborts. The promise itself keeps running (its owner tracks it).
 */
export function race<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const stop = onAbort(signal, () => reject(signal.reason));
    promise.then(
      (value) => {
        stop();
        resolve(value);
      },
      (error) => {
        stop();
        reject(error);
      },
    );
  });
}

/** Races of many promises against one signal, with one listener for all (see {@linkcode raceGroup}). */
export interface RaceGroup {
  /** Settle with `promise`, or reject with the signal's reason once it aborts. */
  race<T>(promise: Promise<T>): Promise<T>;
  /** Stop listening (the races still pending then only settle with their promises). */
  dispose(): void;
}

/**
 * Race many promises against `signal` with one listener on it, however many
 * there are: a batch of a thousand identities racing one caller's signal
 * would otherwise add a thousand listeners to it (and Node warns past ten).
 */
export function raceGroup(signal: AbortSignal | undefined): RaceGroup {
  if (signal === undefined) return { race: (promise) => promise, dispose: nothing };
  const pending = new Set<(reason: unknown) => void>();
  const stop = onAbort(signal, () => {
    for (const reject of pending) reject(signal.reason);
    pending.clear();
  });
  return {
    race<T>(promise: Promise<T>): Promise<T> {
      if (signal.aborted) return Promise.reject(signal.reason);
      return new Promise<T>((resolve, reject) => {
        pending.add(reject);
        promise.then(
          (value) => {
            pending.delete(reject);
            resolve(value);
          },
          (error) => {
            pending.delete(reject);
            reject(error);
          },
        );
      });
    },
    dispose() {
      stop();
      pending.clear();
    },
  };
}

/** One signal per listener-to-be of a caller's signal, all aborted through one listener (see {@linkcode fanOut}). */
export interface FanOut {
  /** The signals, in order: each aborts with `signal`'s reason when it does. */
  readonly signals: readonly AbortSignal[];
  /** Stop listening to the caller's signal (every wait on the signals ended). */
  dispose(): void;
}

// Node warns past ten listeners on one signal: a few waits share it as is.
const SHARED_UP_TO = 4;

/**
 * `count` signals that abort when `signal` does, for waits that each listen
 * to their own (a getMany's identities, each through coalesce() and lease()):
 * up to four share `signal` itself; past that each gets its own, and
 * `signal` gets one listener for all.
 */
export function fanOut(signal: AbortSignal, count: number): FanOut {
  if (count <= SHARED_UP_TO || signal.aborted) {
    return { signals: Array.from({ length: count }, () => signal), dispose: nothing };
  }
  const controllers = Array.from({ length: count }, () => new AbortController());
  const stop = onAbort(signal, () => {
    for (const controller of controllers) controller.abort(signal.reason);
  });
  return { signals: controllers.map((c) => c.signal), dispose: stop };
}
