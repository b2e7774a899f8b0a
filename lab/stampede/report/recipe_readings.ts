/**
 * The sentences under each of the recipes' tables: per recipe, where it
 * fails in this story and why herdless does not, with the run's own numbers.
 *
 * @module
 */
import type { RowResult } from "../types.ts";
import { count as n } from "../../shared/format.ts";

type Line = (r: RowResult, herdless: RowResult) => string;

// Whole milliseconds: these sentences quote tails of hundreds of ms and more.
const ms = (x: number) => n(Math.round(x));
const perReq = (r: RowResult) => (r.requests === 0 ? "0" : ((r.commands ?? 0) / r.requests).toFixed(1));
const failed = (r: RowResult) => n(r.errors + r.timeouts);
const stale = (r: RowResult) => n(r.pastTtl ?? r.stale);

/** One sentence per recipe per story. */
const LINES: Record<string, Partial<Record<string, Line>>> = {
  "cold-burst": {
    "recipe 001": (r, h) =>
      `one load too (${n(r.originCalls)}), but its waiters poll every 50 ms: ${perReq(r)} Redis commands per request ` +
      `against herdless' ${perReq(h)}, whose waiters are woken by the publication (client tracking) instead of asking.`,
    "recipe 000": (r, h) =>
      `one load (${n(r.originCalls)}); each waiter sends GET + SET NX every 10-25 ms, ${perReq(r)} commands per ` +
      `request against ${perReq(h)}: Redis load grows with the waiters and the origin time.`,
    "recipe 002": (r) =>
      `one load (${n(r.originCalls)}) and few commands (${perReq(r)} per request): single flight keeps one waiter ` +
      "per process, which backs off 50 to 500 ms; the price shows when the owner is slow (the 5 s story).",
  },
  "hot-key": {
    "recipe 001": (r) =>
      `holds here (${n(r.originCalls)} origin calls); ${stale(r)} responses past the TTL are lock losers serving ` +
      "their copy while the owner reloads in its caller's path, and its +-10% jitter can let a value outlive the " +
      "configured TTL (its test shows it), which herdless' jitter never does (it only shortens).",
    "recipe 000": (r) =>
      `no stale serving and no early refresh: every expiry is a miss that callers wait out polling (p99 ${
        ms(r.latency.p99)
      } ms, ${failed(r)} errors and timeouts), where herdless refreshes early in the background.`,
    "recipe 002": (r) =>
      `${stale(r)} responses served past the TTL: a lock loser serves the old envelope while the winner ` +
      "refreshes in the caller's path; herdless' xfetch refreshes in the background before the expiry.",
  },
  "many-keys": {
    "recipe 001": (r, h) =>
      `peak in flight ${n(r.peakConcurrent)} against herdless' ${n(h.peakConcurrent)}: +-10% jitter spreads ` +
      "expiries less than herdless' spread, and nothing caps loads in flight.",
    "recipe 000": (r, h) =>
      `peak ${n(r.peakConcurrent)} (herdless ${n(h.peakConcurrent)}) and ${failed(r)} errors and timeouts: ` +
      "its jitter spreads only a tenth of the TTL, and every missing key's callers poll for it.",
    "recipe 002": (r, h) =>
      `peak ${n(r.peakConcurrent)} (herdless ${n(h.peakConcurrent)}): its 20 slots are per process, ` +
      "so 4 processes may run 80 loads; herdless' limit() caps each cache at 8 and refuses the excess at once.",
  },
  "slow-origin-below": {
    "recipe 001": (r, h) =>
      `one load, but its waiters poll through the whole second: ${perReq(r)} commands per request (herdless ${
        perReq(h)
      }).`,
    "recipe 000": (r, h) =>
      `one load, and ${perReq(r)} commands per request (herdless ${perReq(h)}): every waiter re-reads and ` +
      "re-tries the lease every 10-25 ms for as long as the origin takes.",
    "recipe 002": (r) =>
      `one load and ${perReq(r)} commands per request: the waiters of another process back off ` +
      "50-500 ms, so their p99 rises past the origin time.",
  },
  "slow-origin-above": {
    "recipe 001": (r) =>
      `the failure its article calls a last resort: past 50 x 50 ms every waiter calls the origin itself ` +
      `(${n(r.originCalls)} origin calls, ${n(r.peakConcurrent)} at once, none stored), where herdless' ` +
      "waiters keep waiting for the one load (its lease and wait are set above the origin time).",
    "recipe 000": (r) =>
      `every caller times out (${failed(r)}): its 2 s deadline covers the owner's load too, so a 5 s origin ` +
      `is abandoned and re-started by the next owner (${n(r.originCalls)} calls, none published).`,
    "recipe 002": (r) =>
      `every caller fails (${failed(r)}): the other processes' waiters give up after 1.25 s of backoff, the ` +
      "owner's callers after the single flight's 2 s; herdless waits as long as its caller allows.",
  },
  "failing-origin": {
    "recipe 001": (r) =>
      `${failed(r)} callers get the origin's error: the lock owner has no stale-if-error (its losers serve ` +
      "their copy, the owner does not); herdless' swr error window serves the last good value to every caller.",
    "recipe 000": (r) =>
      `no stale serving: ${failed(r)} errors, and the others wait through the outage (p99 ${ms(r.latency.p99)} ms, ${
        perReq(r)
      } commands per request) while owner after owner calls the failing origin.`,
    "recipe 002": (r) =>
      `${failed(r)} errors: each failed refresh fails the whole single flight (its leader and everyone who ` +
      "joined it); herdless serves the last good value instead.",
  },
  "flush": {
    "recipe 001": (r, h) =>
      `peak in flight ${n(r.peakConcurrent)} against herdless' ${n(h.peakConcurrent)}: nothing bounds ` +
      "loads across keys, so the slowing origin serves them all at once; herdless caps them and refuses the rest " +
      `fast (errors and timeouts: ${failed(h)}).`,
    "recipe 000": (r, h) =>
      `peak ${n(r.peakConcurrent)} (herdless ${n(h.peakConcurrent)}): one load per key, but every key at ` +
      "once, and its waiters poll.",
    "recipe 002": (r, h) =>
      `peak ${n(r.peakConcurrent)} (herdless ${n(h.peakConcurrent)}): 20 slots per process and a 0.5 s ` +
      "queue bound it, but 4 processes x 20 is still 80 loads on one origin.",
  },
  "clock-skew": {
    "recipe 001": (r) =>
      `the skewed process writes an expiry 30 s late, so the other processes never refresh: ` +
      `${stale(r)} responses served past the TTL (${n(r.originCalls)} origin calls), until Redis drops the value ` +
      "at TTL + grace; herdless reads the remaining time from Redis (PTTL), never from a clock.",
    "recipe 000": () => "unaffected: it keeps no timestamps, only Redis TTLs (as herdless).",
    "recipe 002": (r) =>
      `the same as 001: its envelope's expiry is the writer's wall clock, ${stale(r)} responses served ` +
      "past the TTL.",
  },
  "paused-owner": {
    "recipe 001": (r) =>
      `${n(r.older ?? 0)} responses older than a value already served: the paused owner's unconditional SET ` +
      "replaced the newer value the next owner had published; herdless' publish checks the lease token " +
      "and drops the late value.",
    "recipe 000": (r) =>
      `no older value (its publish checks ownership, as herdless'), but it serves nothing while the lease ` +
      `runs out: p99 ${ms(r.latency.p99)} ms and ${perReq(r)} commands per request.`,
    "recipe 002": (r) =>
      `${n(r.older ?? 0)} responses older than a value already served: its plain SET publish has 001's flaw.`,
  },
};

/** The readings under story `id`'s table, one bullet per recipe. */
export function recipeReadings(id: string, rows: readonly RowResult[]): string | undefined {
  const herdless = rows[0];
  if (herdless === undefined) return undefined;
  const lines = rows.slice(1).flatMap((r) => {
    const line = LINES[id]?.[r.set];
    return line === undefined ? [] : [`- ${r.set}: ${line(r, herdless)}`];
  });
  return lines.length === 0
    ? undefined
    : lines.join("\n") + `\n(${n(herdless.originCalls)} origin calls for herdless.)`;
}
