/**
 * The rules by which a slot owner learned from MOVED stands against a later
 * slot map read. Pure: maps are built by hand, no server needed;
 * test/resp/cluster/reshard.test.ts shows the same against a real cluster.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { LearnedSlots } from "../../../resp/cluster/learned.ts";
import { emptyTopology, nodeAddress, type Topology } from "../../../resp/cluster/slot_map.ts";

const A = nodeAddress("127.0.0.1", 7000);
const B = nodeAddress("127.0.0.1", 7001);
const R = nodeAddress("127.0.0.1", 7003); // a replica of A, with A's view

/** A map in which A owns every slot (the view of a node that has not heard of a move). */
function oldView(): Topology {
  const t = emptyTopology();
  t.owners.fill(A.id);
  t.nodes.set(A.id, A).set(B.id, B).set(R.id, R);
  t.primaries.push(A.id);
  return t;
}

const reachable = () => true;
const learned = suite("LearnedSlots");

learned("a read that started before the MOVED keeps the owner the MOVED named, whoever answered it", () => {
  const slots = new LearnedSlots();
  const startedAt = slots.seq;
  slots.learn(10, B);
  for (const from of [R.id, A.id, B.id]) {
    const read = oldView();
    slots.reconcile(read, startedAt, from, reachable);
    assert.is(read.owners[10], B.id, `read from ${from}`);
    assert.is(read.owners[11], A.id, "other slots are the read's");
    assert.ok(read.primaries.includes(B.id), "the MOVED target is a primary of the map");
  }
  assert.is(slots.size, 1);
});

learned("a later read from another node with the old view does not undo the MOVED either", () => {
  const slots = new LearnedSlots();
  slots.learn(10, B);
  const read = oldView();
  slots.reconcile(read, slots.seq, R.id, reachable);
  assert.is(read.owners[10], B.id);
  assert.is(slots.size, 1, "still remembered");
});

learned("a read that agrees with the MOVED ends the need to remember it", () => {
  const slots = new LearnedSlots();
  const startedAt = slots.seq;
  slots.learn(10, B);
  const read = oldView();
  read.owners[10] = B.id;
  slots.reconcile(read, startedAt, R.id, reachable);
  assert.is(slots.size, 0);
  const next = oldView();
  slots.reconcile(next, slots.seq, R.id, reachable);
  assert.is(next.owners[10], A.id, "a forgotten slot is the map's again");
});

learned("a later read from the node the MOVED named is its own word: it gave the slot away", () => {
  const slots = new LearnedSlots();
  slots.learn(10, B);
  const read = oldView();
  slots.reconcile(read, slots.seq, B.id, reachable);
  assert.is(read.owners[10], A.id);
  assert.is(slots.size, 0);
});

learned("a later read wins when the node the MOVED named cannot be reached (a failover moved the slot on)", () => {
  const slots = new LearnedSlots();
  slots.learn(10, B);
  const read = oldView();
  slots.reconcile(read, slots.seq, R.id, (id) => id !== B.id);
  assert.is(read.owners[10], A.id);
  assert.is(slots.size, 0);
});

learned("a newer MOVED for the slot replaces the older one, and counts as later than reads begun before it", () => {
  const slots = new LearnedSlots();
  slots.learn(10, B);
  const startedAt = slots.seq;
  slots.learn(10, A);
  const read = oldView();
  read.owners[10] = B.id;
  slots.reconcile(read, startedAt, B.id, reachable);
  assert.is(read.owners[10], A.id, "B's read began before B sent the command to A");
});

learned.run();
