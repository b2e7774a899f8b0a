/** Assertions shared by the test files. */
import * as assert from "uvu/assert";

/**
 * Assert that `fn` rejects with an instance of `ErrorClass` (checked by name
 * too, so an error from a second loaded copy still matches) whose message
 * includes `message` (or matches it, for a RegExp).
 */
export async function rejects(
  fn: () => Promise<unknown>,
  ErrorClass: abstract new (...args: never[]) => Error,
  message?: string | RegExp,
): Promise<Error> {
  let caught: unknown;
  try {
    await fn();
  } catch (error) {
    caught = error;
  }
  if (caught === undefined) assert.unreachable(`expected a ${ErrorClass.name}, but it resolved`);
  const named = caught instanceof Error && caught.name === ErrorClass.name;
  if (!(caught instanceof Error) || (!(caught instanceof ErrorClass) && !named)) {
    assert.unreachable(`expected a ${ErrorClass.name}, got ${String(caught)}`);
  }
  const error = caught as Error;
  if (typeof message === "string") {
    assert.ok(
      error.message.includes(message),
      `message ${JSON.stringify(error.message)} lacks ${JSON.stringify(message)}`,
    );
  } else if (message) assert.match(error.message, message);
  return error;
}

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

/** Poll `check` every `everyMs` until it returns true; throw after `withinMs`. For waiting on real events (a server restart), not for races. */
export async function until(check: () => boolean | Promise<boolean>, withinMs = 5000, everyMs = 10): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
