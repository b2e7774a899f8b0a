/**
 * The strategies of one pipeline, checked and composed by what they do:
 * read hooks into one judge of an entry, fill hooks into the fill chain by
 * stage (`caller`, `process`, `redis`, `owner`, outermost first), load hooks
 * around each origin call, write hooks into the write phase. Only hooks of
 * one kind and stage keep the order given, so `lease(), coalesce()` composes
 * as `coalesce(), lease()`.
 *
 * @module
 */
import type { Entry, Fill, FillStage, Load, Strategy, Verdict, WritePlan } from "../contract.ts";
import { compose, composeLoad } from "./fill/mod.ts";

/** The hooks of a pipeline's strategies, composed. */
export interface Composition {
  /** The strategies, in the order given (attached and closed in that order). */
  readonly strategies: readonly Strategy[];
  /** The read phase: the read hooks' verdict on an entry (`hit` when fresh and no hook says otherwise). */
  judge(entry: Entry | undefined): Verdict;
  /** The fill chain, down to each request's innermost step. */
  readonly fill: Fill;
  /** The load chain, around each origin call. */
  readonly load: Load;
  /** The write phase: every write hook shapes `plan`. */
  write(plan: WritePlan): void;
  /** Whether any strategy listens for superseded loads. */
  readonly superseding: boolean;
  /** Tell the strategies that the loads running for `key` (every key without one) are superseded. */
  superseded(key?: string): void;
  /** Every strategy's check of a TTL. */
  checkTtl(ttlMs: number): void;
  /** Whether a fill hook shares one fill among this process' callers (`coalesce()`, at stage `process`). */
  readonly sharesInProcess: boolean;
}

const STAGES: readonly FillStage[] = ["caller", "process", "redis", "owner"];
const HIT: Verdict = Object.freeze({ kind: "hit" });
const MISS: Verdict = Object.freeze({ kind: "miss" });
/** Strategies that joined a cache: one object per cache. */
const joined = new WeakSet<Strategy>();

/** Check `strategies` (objects, each once, none another cache's) and compose their hooks. */
export function composeStrategies(strategies: readonly Strategy[]): Composition {
  checkStrategies(strategies);
  const readers = strategies.filter((s) => typeof s.read === "function");
  const writers = strategies.filter((s) => typeof s.write === "function");
  const superseders = strategies.filter((s) => typeof s.superseded === "function");
  const checkers = strategies.filter((s) => typeof s.checkTtl === "function");
  return {
    strategies,
    judge: judgeBy(readers),
    fill: compose(byStage(strategies.filter((s) => typeof s.fill === "function"))),
    load: composeLoad(strategies),
    write(plan) {
      for (const s of writers) s.write!(plan);
    },
    superseding: superseders.length > 0,
    superseded(key) {
      for (const s of superseders) s.superseded!(key);
    },
    checkTtl(ttlMs) {
      for (const s of checkers) s.checkTtl!(ttlMs);
    },
    sharesInProcess: strategies.some((s) => typeof s.fill === "function" && s.stage === "process"),
  };
}

/**
 * Mark `strategies` as taken by a cache, once it exists: a pipeline that
 * failed to build (a jitter spread above its TTL) leaves them reusable.
 */
export function claim(strategies: readonly Strategy[]): void {
  for (const s of strategies) joined.add(s);
}

// The judge of a hit is called on every hit: without read hooks it reads
// one number.
function judgeBy(readers: readonly Strategy[]): (entry: Entry | undefined) => Verdict {
  if (readers.length === 0) return (entry) => entry !== undefined && entry.freshMs > 0 ? HIT : MISS;
  return (entry) => {
    let verdict = entry !== undefined && entry.freshMs > 0 ? HIT : MISS;
    for (const s of readers) verdict = s.read!(verdict, entry);
    return verdict;
  };
}

// A stable sort by stage: hooks of one stage keep the order given.
function byStage(fills: readonly Strategy[]): Strategy[] {
  const rank = (s: Strategy) => {
    const i = STAGES.indexOf(s.stage ?? "caller");
    if (i < 0) {
      throw new TypeError(
        `Cannot create pipeline: ${s.name}()'s stage must be one of ${STAGES.map((x) => `"${x}"`).join(", ")}, got ${
          JSON.stringify(s.stage)
        }`,
      );
    }
    return i;
  };
  return fills.map((s, i) => ({ s, i, r: rank(s) })).sort((a, b) => a.r - b.r || a.i - b.i).map(({ s }) => s);
}

function checkStrategies(strategies: readonly Strategy[]): void {
  const names = new Map<string, number>();
  strategies.forEach((s, i) => {
    if (typeof s === "function") {
      const name = (s as { name?: unknown }).name;
      throw new TypeError(
        `Cannot create pipeline: strategy ${i + 1} is a function, not a strategy${
          typeof name === "string" && name !== "" ? `: did you mean ${name}()?` : ""
        }`,
      );
    }
    if (s === null || typeof s !== "object" || typeof s.name !== "string") {
      throw new TypeError(`Cannot create pipeline: strategy ${i + 1} must be an object returned by a strategy factory`);
    }
    const twice = names.get(s.name);
    if (twice !== undefined) {
      throw new TypeError(
        `Cannot create pipeline: ${s.name}() is given twice (strategies ${twice + 1} and ${
          i + 1
        }); give each strategy once`,
      );
    }
    names.set(s.name, i);
    if (joined.has(s)) {
      throw new TypeError(
        `Cannot create pipeline: this ${s.name}() strategy already belongs to another cache; call ${s.name}() once per pipeline`,
      );
    }
  });
}
