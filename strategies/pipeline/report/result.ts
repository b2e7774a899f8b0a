/**
 * What one `getEntry` call reports besides its value: where the value came
 * from, whether it was stale, how old it is in the server's time and how
 * long it stays fresh, and whether this call's load was stored. Built only
 * for `getEntry`: a `get` passes no report and pays nothing for it.
 *
 * @module
 */
import type { Entry, Outcome } from "../../contract.ts";
import type { CacheResult } from "../../types.ts";

/** The facts a `getEntry` gathers on its way, turned into a {@linkcode CacheResult} at the end. */
export class ResultReport {
  source: CacheResult<unknown>["source"] = "origin";
  stale = false;
  ageMs = 0;
  freshForMs = 0;
  stored = false;
  degraded: CacheResult<unknown>["degraded"] = false;
  notModified = false;

  /** A judged entry was served (a hit, a stale hit, or a stale-if-error fallback). */
  served(entry: Entry, near: boolean, stale: boolean): void {
    this.source = near ? "near" : "redis";
    this.stale = stale;
    this.ageMs = Math.max(0, entry.ageMs ?? 0);
    this.freshForMs = entry.freshMs;
    this.stored = false;
    this.notModified = false;
  }

  /** A fill ended with `outcome` (this call's load, one it joined, or another owner's value read). */
  filled(outcome: Outcome): void {
    if (outcome.from === "cache") {
      this.source = "redis";
      this.ageMs = Math.max(0, outcome.entry?.ageMs ?? 0);
      this.freshForMs = outcome.entry?.freshMs ?? 0;
      this.stored = false;
    } else {
      this.source = "origin";
      this.ageMs = 0;
      this.freshForMs = outcome.published ? outcome.freshMs ?? 0 : 0;
      this.stored = outcome.published;
    }
    this.notModified = outcome.notModified === true;
    this.stale = false;
    this.degraded = outcome.degraded ?? false;
  }

  /** The result of the call, with its value. */
  result<T>(value: T): CacheResult<T> {
    return {
      value,
      source: this.source,
      stale: this.stale,
      ageMs: this.ageMs,
      freshForMs: this.freshForMs,
      stored: this.stored,
      degraded: this.degraded,
      notModified: this.notModified,
    };
  }
}
