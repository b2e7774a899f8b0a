/**
 * The two chains of hooks: the fill chain (strategies' `fill` hooks wrapped
 * around the innermost step, outermost first) and the load chain (their
 * `load` hooks around each origin call). Each request carries hidden chain state
 * (its innermost step: a `get`'s load and publication, or a `getMany`
 * batch's collection; and which levels already called `next()`), copied
 * along when a strategy passes the request on as `{ ...req }`.
 *
 * @module
 */
import type { Fill, FillRequest, Load, Outcome, Strategy } from "../../contract.ts";

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

const ORIGIN = Symbol("herdless.origin");
type Carrier = Parameters<Load>[0] & { readonly [ORIGIN]: () => Promise<readonly unknown[]> };

/** Call the origin `call` through `load` (the composed load hooks). */
export function runOrigin(
  load: Load,
  req: Parameters<Load>[0],
  call: () => Promise<unknown> | unknown,
): Promise<readonly unknown[]> {
  const carrier: Carrier = { ...req, [ORIGIN]: async () => [await call()] };
  return load(carrier);
}

/** Run a batch origin call (already returning aligned values) through `load`. */
export function runBatchOrigin(
  load: Load,
  req: Parameters<Load>[0],
  call: () => Promise<readonly unknown[]>,
): Promise<readonly unknown[]> {
  const carrier: Carrier = { ...req, [ORIGIN]: call };
  return load(carrier);
}

/** Compose the strategies' `load` hooks around the origin call a request carries. */
export function composeLoad(strategies: readonly Strategy[]): Load {
  let chain: Load = (req) => {
    const call = (req as Carrier)[ORIGIN];
    if (call === undefined) {
      return Promise.reject(
        new TypeError("Cannot load: a load strategy must pass the request on as a copy ({ ...req })"),
      );
    }
    return call();
  };
  for (let i = strategies.length - 1; i >= 0; i--) {
    const s = strategies[i]!;
    if (typeof s.load === "function") chain = s.load(chain);
  }
  return chain;
}
