/**
 * What the parent reads from the cache server between faults: the workers'
 * connections (named `chaos-w<id>`) with their flags, and `connected_clients`.
 *
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import type { RedisLike } from "../../mod.ts";
import { type ClientInfo, clientList, info } from "../shared/server_info.ts";

// Read by the rest of the chaos run from here, beside what only it reads.
export { clientList, info };

/** The workers' connections as the server sees them. */
export async function workerClients(admin: RedisLike): Promise<ClientInfo[]> {
  return (await clientList(admin)).filter((c) => c.name.startsWith("chaos-w"));
}

/** Connections at a phase boundary: the workers' (by name), everybody's, and the proxy's. */
export interface Connections {
  workers: number;
  server: number;
  proxy: number;
}

export async function connections(admin: RedisLike, proxyConnections: number): Promise<Connections> {
  return {
    workers: (await workerClients(admin)).length,
    server: await info(admin, "clients", "connected_clients"),
    proxy: proxyConnections,
  };
}

/**
 * Server counters worth a note when they move during a fault: evicted keys,
 * errors the server replied with (`errorstat_OOM`, `errorstat_NOSCRIPT`...)
 * and, from its log, connections it closed over their output buffer limit.
 */
export async function serverCounters(admin: RedisLike, logFile: string): Promise<Record<string, number>> {
  const counters: Record<string, number> = {};
  counters["evicted keys"] = await info(admin, "stats", "evicted_keys");
  const errors = String(await admin.send(["INFO", "errorstats"]));
  for (const [, code, count] of errors.matchAll(/^errorstat_(\S+):count=(\d+)/gm)) {
    counters[`${code} replies`] = Number(count);
  }
  const log = existsSync(logFile) ? readFileSync(logFile, "utf8") : "";
  counters["closed over output buffer limit"] = log.match(/overcoming of output buffer limits/g)?.length ?? 0;
  return counters;
}

/** What rose between two snapshots (a restart resets the server's counters: those that fell are left out). */
export function rises(before: Record<string, number>, after: Record<string, number>): string[] {
  return Object.entries(after)
    .map(([name, n]) => [name, n - (before[name] ?? 0)] as const)
    .filter(([, d]) => d > 0)
    .map(([name, d]) => `${d.toLocaleString("en-US")} ${name}`);
}

/** Connections on the server named `name` (the workerd client's Worker names each of its own `chaos-cf`). */
export async function namedClients(admin: RedisLike, name: string): Promise<number> {
  return (await clientList(admin)).filter((c) => c.name === name).length;
}
