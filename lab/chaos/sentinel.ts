/**
 * The chaos run's Sentinel group, started only when the "Sentinel failover"
 * fault is scheduled: the test harness's group (1 master, 2 replicas, 3
 * sentinels, all disposable on free loopback ports, down-after 1000 ms),
 * read by the sentinel worker through `connectSentinel`. Never behind the
 * fault proxy: the other faults do not reach it. The parent watches it over
 * one named connection per data node (spawning redis-cli at every phase
 * boundary costs seconds on a loaded machine).
 *
 * @module
 */
import { connect, pipeline, type RedisClient, swr } from "../../mod.ts";
import { settings } from "./config.ts";
import type { Value } from "./origin.ts";
import { type SentinelGroup, startSentinelGroup } from "../../test/support/redis_sentinel.ts";
import { clientList, type Connections, info } from "./probe.ts";

/** The master group's name, as the sentinels monitor it. */
export const SENTINEL_NAME = "chaos";

/** The group and the parent's connections to its data nodes. */
export interface ChaosSentinel {
  readonly group: SentinelGroup;
  /** `ROLE`'s first element on the data node on `port` (`master` or `slave`). */
  role(port: number): Promise<string>;
  /** The sentinel worker's connections on every data node, and `connected_clients` where it has one. */
  connections(): Promise<Connections>;
  /**
   * The sentinel worker's keys whose servable version (what a get would be served: fresh or within `staleMs`) is
   * higher on the data node `from` than on `to`: written to the old master and never replicated to the new one.
   */
  lostKeys(from: number, to: number): Promise<{ key: string; from: number; to: number | undefined }[]>;
  stop(): Promise<void>;
}

export async function startSentinel(): Promise<ChaosSentinel> {
  const group = await startSentinelGroup({ name: SENTINEL_NAME });
  const admins = new Map<number, RedisClient>();
  try {
    for (const node of group.nodes) admins.set(node.port, await connect({ url: node.url, name: "chaos-admin" }));
  } catch (error) {
    await Promise.all([...admins.values()].map((a) => a.close()));
    await group.stop();
    throw error;
  }
  const role = async (port: number) => {
    const reply = await admins.get(port)!.send(["ROLE"]);
    return Array.isArray(reply) ? String(reply[0]) : "";
  };
  return {
    group,
    role,
    async connections() {
      let workers = 0;
      let server = 0;
      for (const admin of admins.values()) {
        // The sentinel worker's connection has no name (connectSentinel's `name` is the master group's): it is what
        // is not a replication link (flags S, M), a sentinel's (sentinel-…) or the parent's (chaos-admin).
        const here = (await clientList(admin)).filter((c) => c.name === "" && !/[SM]/.test(c.flags)).length;
        workers += here;
        if (here > 0) server += await info(admin, "clients", "connected_clients");
      }
      return { workers, server, proxy: 0 };
    },
    async lostKeys(from, to) {
      // peek() never loads, locks or refreshes: the probe only reads what each node would serve.
      const probe = (port: number) =>
        pipeline<Value>(
          { redis: admins.get(port)!, ttlMs: settings.ttlMs, namespace: "chaos", wakeups: "poll" },
          swr({ staleMs: settings.staleMs }),
        );
      const [old, now] = [probe(from), probe(to)];
      const lost: { key: string; from: number; to: number | undefined }[] = [];
      try {
        for (let i = 0; i < settings.keys; i++) {
          const key = `${settings.sentinelKeyPrefix}${i}`;
          const [a, b] = await Promise.all([old.peek(["chaos", key]), now.peek(["chaos", key])]);
          if (a !== undefined && (b === undefined || a.v > b.v)) lost.push({ key, from: a.v, to: b?.v });
        }
      } finally {
        await Promise.all([old.close(), now.close()]);
      }
      return lost;
    },
    async stop() {
      await Promise.all([...admins.values()].map((a) => a.close()));
      await group.stop();
    },
  };
}
