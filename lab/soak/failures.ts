/**
 * The soak's count of failed gets: by kind (the origin's own failures apart
 * from Redis' and the client's), and, around a forced failover, how many
 * there were, from when to when, and how many of gets that began after the
 * clients had followed it.
 *
 * @module
 */

/** The message of the soak origin's own failures. */
export const ORIGIN_HICCUP = "origin hiccup";

/**
 * Failed gets by kind, with only counters and bounds kept: a list of every
 * failure would itself grow the heap the soak measures.
 */
export class Failures {
  readonly byKind = new Map<string, number>();
  readonly samples = new Map<string, string>();
  /** Failures other than the origin's own, before and after the failover was sent. */
  before = 0;
  after = 0;
  /** First and last such failure, in ms after the failover was sent. */
  first: number | undefined;
  last: number | undefined;
  /**
   * Such failures of gets that began after every client had reported the
   * failover (a get that began before may fail later: its command was lost
   * at the switch, and the failure reaches the caller through the strategies).
   */
  afterFollowed = 0;

  add(error: unknown, failoverSentAt: number | undefined, beganFollowed: boolean): void {
    const origin = error instanceof Error && error.message.includes(ORIGIN_HICCUP);
    const kind = origin ? "origin hiccup" : error instanceof Error ? error.name : typeof error;
    this.byKind.set(kind, (this.byKind.get(kind) ?? 0) + 1);
    if (!this.samples.has(kind)) this.samples.set(kind, error instanceof Error ? error.message : String(error));
    if (origin) return;
    if (failoverSentAt === undefined) {
      this.before++;
      return;
    }
    const at = Math.round(performance.now() - failoverSentAt);
    this.after++;
    this.first ??= at;
    this.last = at;
    if (beganFollowed) this.afterFollowed++;
  }

  get total(): number {
    let n = 0;
    for (const v of this.byKind.values()) n += v;
    return n;
  }
}
