/** The one rejection check every test file uses. */
import * as assert from "uvu/assert";

// Kept here too, so test files written against the older layout still import them.
export { deferred, until } from "./wait.ts";

/**
 * Assert that `fn` rejects (or throws) an `ErrorClass` (matched by name too,
 * so an error from a second loaded copy of the package still counts) whose
 * message equals `message` exactly, or matches it when it is a RegExp (for
 * messages with variable parts: ports, durations). Returns the error, for
 * checks on its other fields.
 */
export async function rejects(
  fn: () => unknown,
  ErrorClass: abstract new (...args: never[]) => Error,
  message?: string | RegExp,
): Promise<Error> {
  let caught: unknown;
  let threw = false;
  try {
    await fn();
  } catch (error) {
    caught = error;
    threw = true;
  }
  if (!threw) assert.unreachable(`expected a ${ErrorClass.name}, but it resolved`);
  if (!(caught instanceof Error) || (!(caught instanceof ErrorClass) && (caught as Error).name !== ErrorClass.name)) {
    assert.unreachable(
      `expected a ${ErrorClass.name}, got ${
        caught instanceof Error ? `${caught.name}: ${caught.message}` : String(caught)
      }`,
    );
  }
  const error = caught as Error;
  if (typeof message === "string") assert.is(error.message, message);
  else if (message !== undefined) assert.match(error.message, message);
  return error;
}
