/**
 * The soak's Sentinel side (`npm run soak -- --sentinel`): the test harness's
 * group (1 master, 2 replicas, 3 sentinels), the connections the soak holds
 * on each of its servers, and the failover forced part-way through the run.
 * Connections are counted on every data node and every sentinel, not on the
 * master alone: a client that left the old master without closing its
 * connections there would otherwise look clean.
 *
 * @module
 */
import { connect, connectSentinel, type RedisClient, type SentinelClient } from "../../mod.ts";
import { clientList } from "../shared/server_info.ts";
import { type Address, type SentinelGroup, startSentinelGroup } from "../shared/servers.ts";

/** The name the soak's own counting connections carry, so they are not counted. */
const ADMIN = "soak-admin";
/** A failover the clients have not followed in this long has failed. */
const FOLLOW_DEADLINE_MS = 30_000;
/** The old master becomes a replica once the sentinels see its role: they give it some seconds first. */
const SETTLE_DEADLINE_MS = 60_000;

/** How the forced failover went, in ms from `SENTINEL FAILOVER` being sent. */
export interface FailoverReport {
  from: string;
  to: string;
  /** When it was sent, in ms since the measured run began. */
  sentAtMs: number;
  /** Every running sentinel names the new master, which says it is master. */
  agreedMs: number;
  /** Each client's `failover` event; undefined when it did not come within the deadline. */
  followedMs: (number | undefined)[];
  /** Each client's `master` after the wait. */
  clientMasters: string[];
  /** The group is whole again: the old master replicates the new one. */
  settledMs: number | undefined;
  /** Why the group did not settle, if it did not. */
  settleError: string | undefined;
}

/** The group, the clients' factory, the connection count and the failover. */
export interface SoakSentinel {
  readonly group: SentinelGroup;
  /** A client of the group, as an application would open one. */
  client(resp: 2 | 3): Promise<SentinelClient>;
  /** The soak's connections on every server of the group (its own counting connections excluded). */
  connections(): Promise<{ total: number; detail: string }>;
  /** `SENTINEL FAILOVER`, then wait for the sentinels to agree, the clients to follow and the group to settle. */
  failover(clients: readonly SentinelClient[], sentAtMs: number): Promise<FailoverReport>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const name = (a: Address) => `${a.host}:${a.port}`;

export async function startSoakSentinel(): Promise<SoakSentinel> {
  const group = await startSentinelGroup({ name: "soak" });
  const servers = [...group.nodes, ...group.sentinels];
  const admins: RedisClient[] = [];
  try {
    // Named, so that the counting connection (and its reconnect after the
    // sentinels kill the old master's normal clients) is told apart.
    for (const s of servers) admins.push(await connect({ url: s.url, name: ADMIN }));
  } catch (error) {
    for (const a of admins) a.destroy();
    await group.stop();
    throw error;
  }

  // Replication links (S, M) and the sentinels' own links are the group's, not the soak's.
  const count = async (admin: RedisClient): Promise<number> =>
    (await clientList(admin)).filter((c) =>
      !/[SM]/.test(c.flags) && !c.name.startsWith("sentinel-") && c.name !== ADMIN
    )
      .length;

  return {
    group,
    client: (resp) => connectSentinel({ sentinels: group.sentinelUrls, name: group.name, resp }),
    async connections() {
      const master = (await group.master()).port;
      const counts = await Promise.all(admins.map(count));
      const detail = servers.map((s, i) => {
        const role = i >= group.nodes.length ? "sentinel" : s.port === master ? "master" : "replica";
        return `${s.port} ${role} ${counts[i]}`;
      });
      return { total: counts.reduce((a, b) => a + b, 0), detail: detail.join(", ") };
    },
    async failover(clients, sentAtMs) {
      const t0 = performance.now();
      const since = () => Math.round(performance.now() - t0);
      const followedMs: (number | undefined)[] = clients.map(() => undefined);
      const stops = clients.map((c, i) =>
        c.onEvent((event) => {
          if (event.type === "failover" && followedMs[i] === undefined) followedMs[i] = since();
        })
      );
      try {
        // Sends SENTINEL FAILOVER (again while the sentinels answer INPROG or
        // NOGOODSLAVE), throws on any other reply than OK, and returns once
        // every running sentinel names a new master that says it is master.
        const { from, to } = await group.failover();
        const agreedMs = since();
        const deadline = performance.now() + FOLLOW_DEADLINE_MS;
        while (followedMs.some((t) => t === undefined) && performance.now() < deadline) await sleep(20);
        let settledMs: number | undefined;
        let settleError: string | undefined;
        try {
          await group.waitSettled({ replicas: 2, timeoutMs: SETTLE_DEADLINE_MS });
          settledMs = since();
        } catch (error) {
          settleError = (error as Error).message;
        }
        return {
          from: name(from),
          to: name(to),
          sentAtMs,
          agreedMs,
          followedMs,
          clientMasters: clients.map((c) => c.master),
          settledMs,
          settleError,
        };
      } finally {
        for (const stop of stops) stop();
      }
    },
    async stop() {
      for (const a of admins) a.destroy();
      await group.stop();
    },
  };
}

/** The failover's lines of the soak's output, and whether it went through. */
export function describeFailover(report: FailoverReport | undefined, error: unknown): { lines: string[]; ok: boolean } {
  if (report === undefined) {
    return { lines: [`  failover: FAILED: ${error instanceof Error ? error.message : String(error)}`], ok: false };
  }
  const followed = report.followedMs.every((t) => t !== undefined) &&
    report.clientMasters.every((m) => m === report.to);
  const lines = [
    `  failover: SENTINEL FAILOVER sent ${(report.sentAtMs / 1000).toFixed(1)} s into the measured run, answered OK; ` +
    `master ${report.from} -> ${report.to}`,
    `    sentinels agreed after ${report.agreedMs} ms; clients' failover events after ${
      report.followedMs.map((t) => (t === undefined ? "none" : `${t} ms`)).join(" and ")
    }; clients on ${report.clientMasters.join(" and ")}${followed ? "" : "  <-- not followed"}`,
    report.settledMs === undefined
      ? `    group not settled: ${report.settleError}`
      : `    group settled (the old master a replica again, 2 replicas online) after ${report.settledMs} ms`,
  ];
  return { lines, ok: followed };
}
