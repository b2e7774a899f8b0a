/**
 * Origin calls per phase, from the log the origin keeps on the counter
 * server. A call is in excess when it comes sooner than `minGapMs` after the
 * previous call for the same key: a fresh value should still have existed,
 * so the call is beyond one per key per TTL window.
 *
 * @module
 */
import type { RedisLike } from "../../mod.ts";
import { settings } from "./config.ts";
import { LOG_KEY } from "./origin.ts";

/** What the origin saw during one phase. */
export interface PhaseCalls {
  calls: number;
  /** Calls per second while the fault lasted (for warm-up and baseline: over the whole phase). */
  faultRate: number;
  excess: number;
  /** Calls per key, for the two large keys the notes mention. */
  byKey: Map<string, number>;
}

/**
 * Split the origin's log over phases (epoch ms, ascending; a fault lasts from `start` to `faultEnd`), counting the
 * keys `counted` accepts (all by default: the sentinel worker's keys are counted apart from the workers').
 */
export async function callsPerPhase(
  counter: RedisLike,
  times: { start: number; faultEnd: number }[],
  counted: (key: string) => boolean = () => true,
): Promise<PhaseCalls[]> {
  const starts = times.map((t) => t.start);
  const log = (await counter.send(["LRANGE", LOG_KEY, 0, -1])) as string[];
  const calls = log.map((entry) => {
    const [key, at] = entry.split(" ") as [string, string];
    return { key, at: Number(at) };
  }).sort((a, b) => a.at - b.at);
  const phases = starts.map(() => ({ calls: 0, faultRate: 0, excess: 0, byKey: new Map<string, number>() }));
  const previous = new Map<string, number>();
  for (const { key, at } of calls) {
    if (!counted(key)) continue;
    let p = -1;
    while (p + 1 < starts.length && starts[p + 1]! <= at) p++;
    const phase = phases[p];
    const last = previous.get(key);
    previous.set(key, at);
    if (phase === undefined) continue;
    phase.calls++;
    if (at < times[p]!.faultEnd) phase.faultRate++;
    phase.byKey.set(key, (phase.byKey.get(key) ?? 0) + 1);
    const large = key === settings.bigKey || key === settings.hugeKey;
    if (!large && last !== undefined && at - last < settings.minGapMs) phase.excess++;
  }
  for (const [p, phase] of phases.entries()) phase.faultRate /= (times[p]!.faultEnd - times[p]!.start) / 1000;
  return phases;
}
