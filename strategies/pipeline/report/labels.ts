/**
 * The caller's names for identities (the pipeline's `label` option), for
 * events and traces: without it they carry only the hashed data key, so
 * nothing personal in an identity reaches logs by accident.
 *
 * @module
 */
import type { Identity } from "../../types.ts";

// Bounded like the key memo: an event for a key forgotten since names no label, nothing breaks.
const MAX_LABELS = 10_000;

/** The labels of the identities seen lately, by data key. */
export class Labels {
  readonly #label: (identity: Identity) => string;
  readonly #failed: () => void;
  readonly #byKey = new Map<string, string>();

  /**
   * @param label the pipeline's `label` option.
   * @param failed told when `label` throws (counted in `eventErrors`).
   */
  constructor(label: (identity: Identity) => string, failed: () => void) {
    this.#label = label;
    this.#failed = failed;
  }

  /** The label of the data key `key`, if its identity was seen lately. */
  of(key: string): string | undefined {
    return this.#byKey.get(key);
  }

  /** Remember the label of `identity` under its data key `key`. */
  remember(key: string, identity: Identity): void {
    if (this.#byKey.has(key)) return;
    const label = this.name(identity);
    if (label === undefined) return;
    if (this.#byKey.size >= MAX_LABELS) this.#byKey.clear();
    this.#byKey.set(key, label);
  }

  // A label that throws names nothing (the key stands in) and is counted:
  // a logging aid must never fail a get.
  /** The label of `identity`, or `undefined` when the option threw. */
  name(identity: Identity): string | undefined {
    try {
      const label = this.#label(identity);
      return typeof label === "string" ? label : String(label);
    } catch {
      this.#failed();
      return undefined;
    }
  }
}
