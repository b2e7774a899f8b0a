/**
 * `warm`: load what is missing or due among known identities (hot keys at
 * boot), a bounded number at a time, through the strategies: under
 * `lease()` several processes warming the same identities load each about
 * once, the others finding it fresh or waiting for its owner. Each process
 * walks the identities in its own random order, so they spread over
 * different keys instead of queueing behind the same lease. Once one
 * identity finds Redis unreachable (a lost connection, `commandTimeoutMs`),
 * the rest are counted failed without trying.
 *
 * @module
 */
import { fanOut } from "../../../resp/shared/mod.ts";
import type { WarmReport } from "../../cache.ts";
import type { Identity } from "../../types.ts";
import { isOutage } from "../read/mod.ts";

/** One `warm` call. */
export interface WarmCall {
  readonly identities: readonly Identity[];
  readonly concurrency: number;
  readonly signal: AbortSignal | undefined;
  readonly random: () => number;
  /** The data key of an identity (duplicates are warmed once). */
  key(identity: Identity): string;
  /**
   * Warm one identity under `signal` (the worker's own, aborted with the
   * call's): `loaded` when this call's loader ran, `fresh` when it was
   * servable or another filled it.
   */
  one(identity: Identity, signal: AbortSignal | undefined): Promise<"loaded" | "fresh">;
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
  let unreachable = false;
  const workers = Math.min(call.concurrency, order.length);
  // Each worker's request is listened to by coalesce() and lease(): fifty on
  // the call's signal would pass Node's ten-listener warning.
  const fan = call.signal === undefined ? undefined : fanOut(call.signal, workers);
  const worker = async (_: unknown, w: number) => {
    const signal = fan?.signals[w];
    // An aborted warm starts nothing more; what runs finishes. So does one
    // that found Redis unreachable: each identity left would wait out
    // commandTimeoutMs in the client's queue (100 identities, 25 s), so they
    // are counted failed at once.
    while (next < order.length && call.signal?.aborted !== true) {
      if (unreachable) {
        report.failed += order.length - next;
        next = order.length;
        break;
      }
      const identity = order[next++]!;
      try {
        report[await call.one(identity, signal)]++;
      } catch (error) {
        report.failed++;
        if (isOutage(error)) unreachable = true;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: workers }, worker));
  } finally {
    fan?.dispose();
  }
  if (call.signal?.aborted) throw call.signal.reason;
  return report;
}
