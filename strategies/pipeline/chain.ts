/**
 * The fill chain: strategies' `fill` hooks wrapped around the origin load,
 * first strategy outermost. Each request carries hidden per-call state (the
 * loader, and which levels already called `next()`), copied along when a
 * strategy passes the request on as `{ ...req }`.
 *
 * @module
 */
import type { Fill, FillRequest, Loader, Outcome, Strategy } from "../types.ts";

const CALL = Symbol("herdless.call");

interface CallState {
  readonly loader: Loader<unknown>;
  /** Levels of the chain whose next() this call already went through. */
  readonly called: Set<number>;
}

/** A fill request with the loader attached (invisible to strategies). */
export type Request = FillRequest & { readonly [CALL]: CallState };

/** Attach the per-call state the chain needs to a request. */
export function request(fields: FillRequest, loader: Loader<unknown>): Request {
  return { ...fields, [CALL]: { loader, called: new Set() } };
}

/**
 * Compose the strategies' fill hooks around `load`, which receives the
 * call's loader. A strategy that calls `next()` twice for one call, or
 * passes on a request it built from scratch, gets an error instead of a
 * second origin call.
 */
export function compose(
  strategies: readonly Strategy[],
  load: (req: FillRequest, loader: Loader<unknown>) => Promise<Outcome>,
): Fill {
  let chain: Fill = (req) => load(req, (req as Request)[CALL].loader);
  for (let level = strategies.length - 1; level >= 0; level--) {
    const s = strategies[level]!;
    if (typeof s.fill === "function") chain = s.fill(guardNext(chain, s.name, level));
  }
  return chain;
}

function guardNext(next: Fill, strategy: string, level: number): Fill {
  return function nextStep(req) {
    const state = (req as Request)[CALL];
    if (state === undefined) {
      return Promise.reject(
        new TypeError(`Cannot fill: the '${strategy}' strategy must pass the request on as a copy ({ ...req })`),
      );
    }
    if (state.called.has(level)) {
      return Promise.reject(new Error(`Cannot fill: the '${strategy}' strategy called next() twice for one request`));
    }
    state.called.add(level);
    return next(req);
  };
}
