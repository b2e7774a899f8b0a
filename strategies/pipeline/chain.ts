/**
 * The fill chain: strategies' `fill` hooks wrapped around the innermost
 * step, first strategy outermost. Each request carries hidden chain state
 * (its innermost step: a `get`'s load and publication, or a `getMany`
 * batch's collection; and which levels already called `next()`), copied
 * along when a strategy passes the request on as `{ ...req }`.
 *
 * @module
 */
import type { Fill, FillRequest, Outcome, Strategy } from "../types.ts";

const CHAIN = Symbol("herdless.chain");

interface ChainState {
  /** What the request does once every strategy let it through. */
  readonly innermost: (req: FillRequest) => Promise<Outcome>;
  /** Levels of the chain whose next() this request already went through. */
  readonly called: Set<number>;
}

/** A fill request with its innermost step attached (invisible to strategies). */
export type ChainedRequest = FillRequest & { readonly [CHAIN]: ChainState };

/** Attach the state the chain needs to a request. */
export function chained(fields: FillRequest, innermost: (req: FillRequest) => Promise<Outcome>): ChainedRequest {
  return { ...fields, [CHAIN]: { innermost, called: new Set() } };
}

/**
 * Compose the strategies' fill hooks around each request's innermost step.
 * A strategy that calls `next()` twice for one request, or passes on a request
 * it built from scratch, gets an error instead of a second origin call.
 */
export function compose(strategies: readonly Strategy[]): Fill {
  let chain: Fill = (req) => (req as ChainedRequest)[CHAIN].innermost(req);
  for (let level = strategies.length - 1; level >= 0; level--) {
    const s = strategies[level]!;
    if (typeof s.fill === "function") chain = s.fill(guardNext(chain, s.name, level));
  }
  return chain;
}

function guardNext(next: Fill, strategy: string, level: number): Fill {
  return function nextStep(req) {
    const state = (req as ChainedRequest)[CHAIN];
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
