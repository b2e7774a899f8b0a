/**
 * `warm`: load what is missing or due among known identities (hot keys at
 * boot), a bounded number at a time, through the strategies: under
 * `lease()` several processes warming the same identities load each about
 * once, the others finding it fresh or waiting for its owner. Each process
 * walks the identities in its own random order, so they spread over
 * different keys instead of queueing behind the same lease.
 *
 * @module
 */
import type { WarmReport } from "../../cache.ts";
import type { Identity } from "../../types.ts";

/** One `warm` call. */
export interface WarmCall {
  readonly identities: readonly Identity[];
  readonly concurrency: number;
  readonly signal: AbortSignal | undefined;
  readonly random: () => number;
  /** The data key of an identity (duplicates are warmed once). */
  key(identity: Identity): string;
  /** Warm one identity: `loaded` when this call's loader ran, `fresh` when it was servable or another filled it. */
  one(identity: Identity): Promise<"loaded" | "fresh">;
}

/** Warm `call.identities`; one failure does not stop the rest. */
export async function warm(call: WarmCall): Promise<WarmReport> {
  const unique = new Map<string, Identity>();
  for (const identity of call.identities) {
    const key = call.key(identity);
    if (!unique.has(key)) unique.set(key, identity);
  }
  const order = [...unique.values()];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(call.random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const report: WarmReport = { loaded: 0, fresh: 0, failed: 0 };
  let next = 0;
  const worker = async () => {
    // An aborted warm starts nothing more; what runs finishes.
    while (next < order.length && call.signal?.aborted !== true) {
      const identity = order[next++]!;
      try {
        report[await call.one(identity)]++;
      } catch {
        report.failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(call.concurrency, order.length) }, worker));
  if (call.signal?.aborted) throw call.signal.reason;
  return report;
}
