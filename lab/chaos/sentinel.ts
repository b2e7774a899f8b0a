/**
 * The chaos run's Sentinel group, started only when the "Sentinel failover"
 * fault is scheduled: the test harness's group (1 master, 2 replicas, 3
 * sentinels, all disposable on free loopback ports, down-after 1000 ms),
 * read by the sentinel worker through `connectSentinel`. Never behind the
 * fault proxy: the other faults do not reach it.
 *
 * @module
 */
import { type SentinelGroup, startSentinelGroup } from "../../test/support/redis-sentinel.ts";
import type { Connections } from "./probe.ts";

/** The master group's name, as the sentinels monitor it. */
export const SENTINEL_NAME = "chaos";

export function startSentinel(): Promise<SentinelGroup> {
  return startSentinelGroup({ name: SENTINEL_NAME });
}

/**
 * The sentinel worker's data connections on every data node (`workers`), and the master's `connected_clients`
 * (`server`). Its connection has no name (`connectSentinel`'s `name` option is the master group's), so it is told
 * apart by what it is not: not a replica or master link (flags S, M), not a sentinel (named `sentinel-…`), not the
 * redis-cli asking.
 */
export async function sentinelConnections(group: SentinelGroup): Promise<Connections> {
  let workers = 0;
  for (const node of group.nodes) {
    const lines = await group.cli(node.port, "CLIENT", "LIST");
    for (const line of lines) {
      const field = (name: string) => new RegExp(`(?:^| )${name}=(\\S*)`).exec(line)?.[1] ?? "";
      if (field("name") === "" && !/[SM]/.test(field("flags")) && field("cmd") !== "client|list") workers++;
    }
  }
  const master = await group.master();
  const info = await group.cli(master.port, "INFO", "clients");
  const server = Number(info.find((l) => l.startsWith("connected_clients:"))?.split(":")[1]);
  return { workers, server, proxy: 0 };
}
