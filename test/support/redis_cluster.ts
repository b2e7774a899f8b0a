/**
 * A disposable Redis Cluster for tests: 3 primaries and 3 replicas of the
 * local redis-server on free loopback ports, created with
 * `redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes`, and
 * returned only once every node says `cluster_state:ok`, covers all 16384
 * slots, knows every other node, and every replica's link to its primary is
 * up. Works unchanged on Node, Bun and Deno.
 */
import { execFile, spawnSync } from "node:child_process";
import process from "node:process";
import { redisCliBinary, type RedisServer, startRedis } from "./redis_server.ts";

/** A cluster started by {@linkcode startCluster}. */
export interface RedisCluster {
  /** Every node, in start order (roles change with failovers: ask {@linkcode RedisCluster.primaries}). */
  readonly nodes: readonly RedisServer[];
  /** `redis://127.0.0.1:<port>` of every node: seeds for `connectCluster`. */
  readonly seeds: readonly string[];
  /** Run redis-cli against one node and return stdout (throws on a non-zero exit). */
  cli(port: number, ...args: string[]): string;
  /** The node's id (`CLUSTER MYID`). */
  id(port: number): string;
  /** Current primaries that own slots, by port, as the given node sees them (first node by default). */
  primaries(via?: number): { port: number; id: string; slots: [number, number][] }[];
  /** The port of the primary owning `slot`, as the given node sees it. */
  ownerOf(slot: number, via?: number): number;
  /**
   * The port of a replica of the primary on `port`, as the replicas
   * themselves report it (their own `myself` line) with their link up. Waits
   * for one (a demoted primary takes a moment to report its new role);
   * throws after `timeoutMs`, never returns a port that is not a replica.
   */
  replicaOf(port: number, timeoutMs?: number): Promise<number>;
  /** Run redis-cli against one node without blocking the event loop (for use while a load runs). */
  cliAsync(port: number, ...args: string[]): Promise<string>;
  /**
   * Promote the replica on `port` with a coordinated `CLUSTER FAILOVER` and
   * wait until it reports itself primary. A manual failover gives up by
   * itself after a few seconds when the old primary or the votes are slow
   * (a busy machine): it is asked again, up to four times.
   */
  failover(replica: number): Promise<void>;
  /** Wait until every running node agrees the cluster is healthy (see the module doc). */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** Stop every node and remove their directories. Safe to call twice. */
  stop(): Promise<void>;
}

/** Options for {@linkcode startCluster}. */
export interface StartClusterOptions {
  /** @default {3} */
  primaries?: number;
  /** Replicas per primary. @default {1} */
  replicas?: number;
  /** `cluster-node-timeout`: how long a node may be unreachable before it is failed over. @default {1500} */
  nodeTimeoutMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Start a cluster. On any failure every node already started is stopped
 * before the error propagates.
 *
 * @example
 * ```ts
 * const cluster = await startCluster();
 * try { console.log(cluster.seeds); } finally { await cluster.stop(); }
 * ```
 */
export async function startCluster(options: StartClusterOptions = {}): Promise<RedisCluster> {
  const primaries = options.primaries ?? 3;
  const replicas = options.replicas ?? 1;
  const nodeTimeout = options.nodeTimeoutMs ?? 1500;
  const count = primaries * (1 + replicas);
  const nodes: RedisServer[] = [];
  const cliBin = redisCliBinary();
  let stopped = false;

  const cli = (port: number, ...args: string[]): string => {
    const r = spawnSync(cliBin, ["-h", "127.0.0.1", "-p", String(port), ...args], {
      encoding: "utf8",
      timeout: 20_000,
    });
    if (r.status !== 0) throw new Error(`redis-cli -p ${port} ${args.join(" ")} failed: ${r.stderr}${r.error ?? ""}`);
    return r.stdout;
  };
  const info = (port: number, what: string[]): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const line of cli(port, ...what).split(/\r?\n/)) {
      const colon = line.indexOf(":");
      if (colon > 0) out[line.slice(0, colon)] = line.slice(colon + 1).trim();
    }
    return out;
  };
  const running = () => nodes.filter((n) => n.pid !== undefined && isAlive(n.pid));

  const cluster: RedisCluster = {
    nodes,
    get seeds() {
      return nodes.map((n) => n.url);
    },
    cli,
    id: (port) => cli(port, "CLUSTER", "MYID").trim(),
    primaries(via = nodes[0]!.port) {
      return parseClusterNodes(cli(via, "CLUSTER", "NODES"))
        .filter((n) => n.role === "master" && !n.failed && n.slots.length > 0)
        .map(({ port, id, slots }) => ({ port, id, slots }))
        .sort((a, b) => a.slots[0]![0] - b.slots[0]![0]);
    },
    ownerOf(slot, via) {
      for (const p of cluster.primaries(via)) if (p.slots.some(([a, b]) => slot >= a && slot <= b)) return p.port;
      throw new Error(`no primary owns slot ${slot}`);
    },
    async replicaOf(port, timeoutMs = 15_000) {
      const id = cluster.id(port);
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        for (const n of running()) {
          if (n.port === port) continue;
          try {
            const self = parseClusterNodes(cli(n.port, "CLUSTER", "NODES")).find((l) => l.myself);
            if (self?.role !== "slave" || self.primaryId !== id) continue;
            if (info(n.port, ["INFO", "replication"]).master_link_status === "up") return n.port;
          } catch {
            // A node restarting: ask the others.
          }
        }
        if (Date.now() > deadline) throw new Error(`no replica of the primary on port ${port} within ${timeoutMs} ms`);
        await sleep(50);
      }
    },
    cliAsync(port, ...args) {
      return new Promise((resolve, reject) => {
        execFile(
          cliBin,
          ["-h", "127.0.0.1", "-p", String(port), ...args],
          { encoding: "utf8", timeout: 20_000 },
          (error, stdout, stderr) => {
            if (error) reject(new Error(`redis-cli -p ${port} ${args.join(" ")} failed: ${stderr}${error.message}`));
            else resolve(stdout);
          },
        );
      });
    },
    async failover(replica) {
      const isPrimary = async () => (await cluster.cliAsync(replica, "ROLE")).startsWith("master");
      for (let attempt = 1; attempt <= 4; attempt++) {
        const reply = (await cluster.cliAsync(replica, "CLUSTER", "FAILOVER")).trim();
        if (reply !== "OK") throw new Error(`CLUSTER FAILOVER on ${replica}: ${reply}`);
        const deadline = Date.now() + 7000;
        while (Date.now() < deadline) {
          if (await isPrimary()) return;
          await sleep(50);
        }
      }
      throw new Error(`the replica on ${replica} was not promoted after four CLUSTER FAILOVER attempts`);
    },
    async waitHealthy(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      let why = "";
      for (;;) {
        why = healthProblem();
        if (why === "") return;
        if (Date.now() > deadline) throw new Error(`cluster not healthy after ${timeoutMs} ms: ${why}`);
        await sleep(100);
      }
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await Promise.all(nodes.map((n) => n.stop().catch(() => {})));
    },
  };

  function healthProblem(): string {
    const live = running();
    for (const n of live) {
      let i: Record<string, string>;
      try {
        i = info(n.port, ["CLUSTER", "INFO"]);
      } catch (e) {
        return `${n.port}: ${(e as Error).message}`;
      }
      if (i.cluster_state !== "ok") return `${n.port}: cluster_state:${i.cluster_state}`;
      if (i.cluster_slots_ok !== "16384") return `${n.port}: cluster_slots_ok:${i.cluster_slots_ok}`;
      if (Number(i.cluster_known_nodes) < live.length) return `${n.port}: cluster_known_nodes:${i.cluster_known_nodes}`;
      const r = info(n.port, ["INFO", "replication"]);
      if (r.role === "slave" && r.master_link_status !== "up") {
        return `${n.port}: master_link_status:${r.master_link_status}`;
      }
    }
    // Every node must agree on who owns what, or a client could be sent in circles.
    const views = new Set(live.map((n) => JSON.stringify(cluster.primaries(n.port).map((p) => [p.port, p.slots]))));
    if (views.size > 1) return `nodes disagree on slot owners: ${[...views].join(" vs ")}`;
    return "";
  }

  try {
    // Started side by side; every node that did start is in `nodes`, so a failure stops them all.
    const started = await Promise.allSettled(
      Array.from({ length: count }, () =>
        startRedis({
          args: [
            "--cluster-enabled",
            "yes",
            // Relative to --dir, the node's own directory.
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            String(nodeTimeout),
            // A replica may be promoted however long its link was down: tests kill primaries at will.
            "--cluster-replica-validity-factor",
            "0",
            // A primary otherwise waits 5 s for more replicas before each full sync (diskless by default),
            // at the cluster's start and after every failover: no test is about that wait.
            "--repl-diskless-sync-delay",
            "0",
          ],
        })),
    );
    for (const s of started) if (s.status === "fulfilled") nodes.push(s.value);
    const failed = started.find((s) => s.status === "rejected");
    if (failed !== undefined) throw failed.reason;
    const r = spawnSync(
      cliBin,
      [
        "--cluster",
        "create",
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        "--cluster-replicas",
        String(replicas),
        "--cluster-yes",
      ],
      { encoding: "utf8", timeout: 60_000 },
    );
    if (r.status !== 0) throw new Error(`redis-cli --cluster create failed: ${r.stdout}${r.stderr}${r.error ?? ""}`);
    await cluster.waitHealthy();
    return cluster;
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

/** One line of `CLUSTER NODES`. */
export interface ClusterNodeLine {
  id: string;
  port: number;
  role: "master" | "slave";
  /** The primary's id, for a replica. */
  primaryId: string | undefined;
  /** Flagged `fail` or `fail?`. */
  failed: boolean;
  myself: boolean;
  /** Owned slot ranges, inclusive (migration marks left out). */
  slots: [number, number][];
}

/** Parse the text of `CLUSTER NODES`. */
export function parseClusterNodes(text: string): ClusterNodeLine[] {
  const out: ClusterNodeLine[] = [];
  for (const line of text.split("\n")) {
    const f = line.trim().split(" ");
    if (f.length < 8) continue;
    const flags = f[2]!.split(",");
    const slots: [number, number][] = [];
    for (const s of f.slice(8)) {
      if (s.startsWith("[")) continue;
      const [a, b] = s.split("-");
      slots.push([Number(a), Number(b ?? a)]);
    }
    out.push({
      id: f[0]!,
      port: Number(f[1]!.split("@")[0]!.split(":").pop()),
      role: flags.includes("master") ? "master" : "slave",
      primaryId: f[3] === "-" ? undefined : f[3],
      failed: flags.includes("fail") || flags.includes("fail?"),
      myself: flags.includes("myself"),
      slots,
    });
  }
  return out;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
