/**
 * What MOVED replies taught about slot owners, kept against slot map reads
 * that know less.
 *
 * A MOVED comes from a node that has just refused the slot, so it is at
 * least as fresh as any map read that started before it. A read can come
 * from a node with an older view (a replica, or a primary told of a
 * resharding last: nodes not sent `CLUSTER SETSLOT ... NODE` hear of it by
 * gossip, which took up to 1.5 s on a test cluster). Applied blindly,
 * that read would send the slot back to its old owner, which answers MOVED
 * again, and a client under load could bounce between the two until
 * `maxRedirections`. Internal to `client.ts`; not re-exported.
 *
 * @module
 */
import type { NodeAddress, Topology } from "./slot_map.ts";

interface Learned {
  readonly target: NodeAddress;
  /** The value of the counter when the MOVED was learned. */
  readonly seq: number;
}

/** Slot owners learned from MOVED, each with the moment (a counter) it was learned. */
export class LearnedSlots {
  #slots = new Map<number, Learned>();
  #seq = 0;

  /** The counter now: a map read keeps it from its start, to tell which MOVED replies came after it began. */
  get seq(): number {
    return this.#seq;
  }

  /** How many slots a map read has not confirmed yet. */
  get size(): number {
    return this.#slots.size;
  }

  /** Record that a MOVED named `target` as the owner of `slot`. */
  learn(slot: number, target: NodeAddress): void {
    this.#slots.set(slot, { target, seq: ++this.#seq });
  }

  /**
   * Correct a map read before it is applied: a slot learned from MOVED keeps
   * the node the MOVED named unless the read says the same (then it is
   * forgotten: the map has caught up), or the read started after the MOVED
   * and either came from that very node (its own later word: it gave the
   * slot away) or that node is unreachable (a failover moved the slot on).
   *
   * @param topology the map read, changed in place.
   * @param startedAt the counter when the read started.
   * @param from the node the read came from.
   * @param reachable whether the client can talk to a node now.
   */
  reconcile(topology: Topology, startedAt: number, from: string, reachable: (id: string) => boolean): void {
    for (const [slot, { target, seq }] of this.#slots) {
      const read = topology.owners[slot];
      if (read === target.id) {
        this.#slots.delete(slot);
        continue;
      }
      if (seq <= startedAt && (from === target.id || !reachable(target.id))) {
        this.#slots.delete(slot);
        continue;
      }
      topology.owners[slot] = target.id;
      if (!topology.nodes.has(target.id)) topology.nodes.set(target.id, target);
      if (!topology.primaries.includes(target.id)) topology.primaries.push(target.id);
    }
  }
}
