/**
 * Where a lease waiter learns that its key was published or its lease
 * dropped: the invalidations of its own tracked reads, a subscribed
 * client's messages, or polling; and one waiter's ticket.
 *
 * @module
 */
export { ChannelWakeups } from "./channel_wakeups.ts";
export { POLLING, TrackedWakeups } from "./tracked_wakeups.ts";
