/**
 * Send options that carry a deadline and the name of the setting it came
 * from, so a `TimeoutError` names what its reader can change (a cache's own
 * `commandTimeoutMs`, not the `timeoutMs` it passes to the client). One
 * frozen object per setting and value: a hot path sends the same object
 * every time and allocates nothing.
 *
 * @module
 */

/** A deadline and the setting it came from. */
export interface TimeoutOptions {
  readonly timeoutMs: number;
  readonly timeoutSetting: string;
}

const made = new Map<string, Map<number, TimeoutOptions>>();

/** `{ timeoutMs, timeoutSetting: setting }`, frozen, the same object for the same pair. */
export function timeoutOptions(timeoutMs: number, setting: string): TimeoutOptions {
  let bySetting = made.get(setting);
  if (bySetting === undefined) made.set(setting, bySetting = new Map());
  let options = bySetting.get(timeoutMs);
  if (options === undefined) {
    // Bounded: deadlines that grow with a value's size are many; start over now and then.
    if (bySetting.size >= 1024) bySetting.clear();
    bySetting.set(timeoutMs, options = Object.freeze({ timeoutMs, timeoutSetting: setting }));
  }
  return options;
}
