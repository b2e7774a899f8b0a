/**
 * Where a lease waiter learns that its key was published or its lease
 * dropped. With client tracking (our RESP3 clients), the waiter's own reads
 * of the data key and the lease key are tracked, so the publication's write
 * (or the lease's deletion) comes back as an invalidation on the same
 * connection, in order: a write that lands after the waiter's read is never
 * missed, and the command connection is never subscribed (Redis applies its
 * pub/sub output-buffer limits to subscribed connections). A given `wakeups`
 * client is subscribed to the cache's channel instead; otherwise waiters
 * poll. Every waiter also polls, rarely when pushed: an expired lease
 * announces nothing until Redis notices the expiry.
 *
 * @module
 */
import type { Ticket, Wakeups } from "../../contract.ts";
import { WakeupTicket } from "./ticket.ts";
import type { InvalidationConsumer, Invalidations } from "../coherence/mod.ts";

const DATA = ":data";
const LEASE = ":lease";

/** Wake-ups from the invalidations of the waiters' tracked reads. */
export class TrackedWakeups implements Wakeups, InvalidationConsumer {
  readonly #invalidations: Invalidations;
  readonly #watchers = new Map<string, Set<WakeupTicket>>();

  constructor(invalidations: Invalidations) {
    this.#invalidations = invalidations;
    invalidations.consume(this);
  }

  ready(): Promise<boolean> {
    return Promise.resolve(this.#invalidations.active);
  }

  watch(key: string): Ticket {
    let set = this.#watchers.get(key);
    if (set === undefined) this.#watchers.set(key, set = new Set());
    const watchers = this.#watchers;
    const ticket = new WakeupTicket(() => {
      set.delete(ticket);
      if (set.size === 0 && watchers.get(key) === set) watchers.delete(key);
    });
    set.add(ticket);
    return ticket;
  }

  invalidate(keys: readonly string[]): void {
    if (this.#watchers.size === 0) return;
    for (const key of keys) {
      // Either end of an identity wakes its waiters: the data key (a
      // publication) or the lease key (a release, an expiry).
      const data = key.endsWith(LEASE) ? key.slice(0, -LEASE.length) + DATA : key;
      const tickets = this.#watchers.get(data);
      if (tickets !== undefined) { for (const ticket of tickets) ticket.wake(); }
    }
  }

  reset(): void {
    // Anything may have changed: every waiter looks again.
    for (const tickets of this.#watchers.values()) for (const ticket of tickets) ticket.wake();
  }
}

/** No announcements: waiters poll. */
export const POLLING: Wakeups = {
  ready: () => Promise.resolve(false),
  watch: () => new WakeupTicket(() => {}),
};
