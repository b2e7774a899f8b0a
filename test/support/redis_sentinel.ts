/**
 * A disposable Sentinel group for tests: 1 master and 2 replicas of the local
 * redis-server, watched by 3 sentinels (`redis-server <conf> --sentinel`, the
 * same binary) on free loopback ports, with a low `down-after-milliseconds`
 * and `failover-timeout` so a failover takes seconds. Returned only once the
 * group is settled (see {@linkcode SentinelGroup.waitSettled}); every
 * command the harness sends checks its reply. Works unchanged on Node, Bun
 * and Deno.
 */
import { execFile } from "node:child_process";
import process from "node:process";
import { redisCliBinary, type RedisServer, startRedis } from "./redis_server.ts";

/** An address as the sentinels name it. */
export interface Address {
  readonly host: string;
  readonly port: number;
}

/** A group started by {@linkcode startSentinelGroup}. */
export interface SentinelGroup {
  /** The master group's name, as the sentinels monitor it. */
  readonly name: string;
  /** The data nodes in start order (the first started as master; roles change with failovers). */
  readonly nodes: readonly RedisServer[];
  /** The sentinels. */
  readonly sentinels: readonly RedisServer[];
  /** `redis://[:<sentinel password>@]127.0.0.1:<port>` of every sentinel. */
  readonly sentinelUrls: readonly string[];
  /** `down-after-milliseconds`. */
  readonly downAfterMs: number;
  /** `failover-timeout`. */
  readonly failoverTimeoutMs: number;
  /** The data node on `port`. */
  node(port: number): RedisServer;
  /** The master as the first running sentinel names it. */
  master(): Promise<Address>;
  /** `ROLE`'s first element on the data node on `port` (`master` or `slave`). */
  role(port: number): Promise<string>;
  /** Run redis-cli against a port without blocking the event loop; returns its lines. */
  cli(port: number, ...args: string[]): Promise<string[]>;
  /**
   * `SENTINEL FAILOVER` (asked again while the sentinels answer INPROG or
   * NOGOODSLAVE) and wait until every running sentinel names a new master
   * that itself says it is master. Returns the old and the new master.
   */
  failover(timeoutMs?: number): Promise<{ from: Address; to: Address }>;
  /**
   * Wait until every running sentinel names the same master, which says it
   * is master; knows `replicas` replicas that are up (flags exactly `slave`,
   * link to the master up); and knows every other running sentinel.
   */
  waitSettled(options?: { replicas?: number; timeoutMs?: number }): Promise<void>;
  /**
   * Make the old master a replica of the new one now (`REPLICAOF`), as the
   * sentinels would themselves some seconds later (they first wait ~8 s for
   * it to report its new role): saves a test that waiting.
   */
  demote(from: Address, to: Address): Promise<void>;
  /** Stop every process and remove their directories. Safe to call twice. */
  stop(): Promise<void>;
}

/** Options for {@linkcode startSentinelGroup}. */
export interface StartSentinelGroupOptions {
  /** @default {"herdless"} */
  name?: string;
  /** `sentinel down-after-milliseconds`. @default {1000} */
  downAfterMs?: number;
  /** `sentinel failover-timeout`. @default {3000} */
  failoverTimeoutMs?: number;
  /** `requirepass` (and `masterauth`) of the data nodes; the sentinels are told it (`sentinel auth-pass`). */
  dataPassword?: string;
  /** `requirepass` of the sentinels (and `sentinel sentinel-pass`, for each other). */
  sentinelPassword?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Start 1 master, 2 replicas and 3 sentinels, and wait until the group is settled. */
export async function startSentinelGroup(options: StartSentinelGroupOptions = {}): Promise<SentinelGroup> {
  const name = options.name ?? "herdless";
  const downAfterMs = options.downAfterMs ?? 1000;
  const failoverTimeoutMs = options.failoverTimeoutMs ?? 3000;
  // A replica's full sync would otherwise wait 5 s for more replicas to share it.
  const dataPassword = options.dataPassword;
  const sentinelPassword = options.sentinelPassword;
  const dataArgs = ["--repl-diskless-sync-delay", "0"];
  if (dataPassword !== undefined) dataArgs.push("--requirepass", dataPassword, "--masterauth", dataPassword);

  const started: RedisServer[] = [];
  try {
    const master = await startRedis({ args: dataArgs });
    started.push(master);
    const replicas = await Promise.all(
      [0, 1].map(() => startRedis({ args: [...dataArgs, "--replicaof", "127.0.0.1", String(master.port)] })),
    );
    started.push(...replicas);
    const nodes = [master, ...replicas];
    for (const n of nodes) passwordOf.set(n.port, dataPassword);
    // Sentinels learn replicas from the master's INFO, sent at once and then
    // every 10 s: replicas already online are known from the first one.
    await waitFor(async () => (await replicasOnline(master.port)) >= 2 ? undefined : "replicas syncing", 10_000);
    const config = [
      `sentinel monitor ${name} 127.0.0.1 ${master.port} 2`,
      `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
      `sentinel failover-timeout ${name} ${failoverTimeoutMs}`,
      `sentinel parallel-syncs ${name} 2`,
      ...(dataPassword === undefined ? [] : [`sentinel auth-pass ${name} ${dataPassword}`]),
      ...(sentinelPassword === undefined
        ? []
        : [`requirepass ${sentinelPassword}`, `sentinel sentinel-pass ${sentinelPassword}`]),
      "",
    ].join("\n");
    const sentinels = await Promise.all([0, 1, 2].map(() => startRedis({ sentinel: true, config })));
    started.push(...sentinels);
    for (const n of sentinels) passwordOf.set(n.port, sentinelPassword);
    const group = makeGroup(name, nodes, sentinels, downAfterMs, failoverTimeoutMs, sentinelPassword);
    await group.waitSettled({ replicas: 2 });
    return group;
  } catch (error) {
    await Promise.all(started.map((s) => s.stop()));
    throw error;
  }
}

async function waitFor(why: () => Promise<string | undefined>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let reason: string | undefined;
  for (;;) {
    try {
      reason = await why();
    } catch (error) {
      reason = (error as Error).message;
    }
    if (process.env.SENTINEL_DEBUG) console.log(Date.now() % 100000, reason);
    if (reason === undefined) return;
    if (Date.now() > deadline) throw new Error(`not settled in ${timeoutMs} ms: ${reason}`);
    await sleep(50);
  }
}

/** Replicas the master on `port` streams to (`INFO replication`: state=online). */
async function replicasOnline(port: number): Promise<number> {
  const info = await cli(port, ["INFO", "replication"]);
  return info.filter((line) => /^slave\d+:.*state=online/.test(line)).length;
}

/** The password of the server on each port, for redis-cli. */
const passwordOf = new Map<number, string | undefined>();

function cli(port: number, args: string[]): Promise<string[]> {
  const password = passwordOf.get(port);
  const auth = password === undefined ? [] : ["--no-auth-warning", "-a", password];
  return new Promise((resolve, reject) => {
    execFile(redisCliBinary(), ["-p", String(port), ...auth, ...args], { timeout: 5000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`redis-cli -p ${port} ${args.join(" ")} failed: ${stderr || error.message}`));
      else resolve(stdout.split("\n").filter((line, i, all) => i < all.length - 1 || line !== ""));
    });
  });
}

/** redis-cli prints a flat reply as alternating field and value lines. */
function fields(lines: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i + 1 < lines.length; i += 2) out.set(lines[i]!, lines[i + 1]!);
  return out;
}

/** A list of flat replies (SENTINEL replicas / sentinels), each `fieldCount` lines long, starts with `name`. */
function records(lines: readonly string[]): Map<string, string>[] {
  const out: Map<string, string>[] = [];
  let current: string[] = [];
  for (const line of lines) {
    if (line === "name" && current.length > 0) {
      out.push(fields(current));
      current = [];
    }
    current.push(line);
  }
  if (current.length > 0) out.push(fields(current));
  return out;
}

function running(server: RedisServer): boolean {
  if (server.pid === undefined) return false;
  try {
    process.kill(server.pid, 0);
    return true;
  } catch {
    return false;
  }
}

function makeGroup(
  name: string,
  nodes: RedisServer[],
  sentinels: RedisServer[],
  downAfterMs: number,
  failoverTimeoutMs: number,
  sentinelPassword: string | undefined,
): SentinelGroup {
  let stopped = false;
  const live = () => sentinels.filter(running);
  const askMaster = async (sentinel: RedisServer): Promise<Address> => {
    const lines = await cli(sentinel.port, ["SENTINEL", "get-master-addr-by-name", name]);
    if (lines.length !== 2) throw new Error(`sentinel ${sentinel.port} does not know ${name}: ${lines.join(" ")}`);
    return { host: lines[0]!, port: Number(lines[1]) };
  };
  const role = async (port: number) => (await cli(port, ["ROLE"]))[0] ?? "";

  /** Why the group is not settled yet, or undefined when it is. */
  const unsettled = async (replicas: number): Promise<string | undefined> => {
    const up = live();
    if (up.length === 0) return "no sentinel is running";
    const masters = await Promise.all(up.map(askMaster));
    const port = masters[0]!.port;
    if (masters.some((m) => m.port !== port)) return `sentinels disagree: ${masters.map((m) => m.port).join(", ")}`;
    if ((await role(port)) !== "master") return `${port} is named master but says ${await role(port)}`;
    const online = await replicasOnline(port);
    if (online < replicas) return `${online} of ${replicas} replicas online on the master ${port}`;
    for (const sentinel of up) {
      const master = fields(await cli(sentinel.port, ["SENTINEL", "master", name]));
      if (master.get("flags") !== "master") return `sentinel ${sentinel.port}: master flags ${master.get("flags")}`;
      const known = records(await cli(sentinel.port, ["SENTINEL", "replicas", name]));
      const ok = known.filter((r) => r.get("flags") === "slave");
      if (ok.length < replicas) return `sentinel ${sentinel.port}: ${ok.length} of ${replicas} replicas up`;
      const others = Number(master.get("num-other-sentinels"));
      if (others < up.length - 1) return `sentinel ${sentinel.port} knows ${others} other sentinels`;
    }
    return undefined;
  };

  return {
    name,
    nodes,
    sentinels,
    sentinelUrls: sentinels.map((s) =>
      sentinelPassword === undefined ? s.url : `redis://:${encodeURIComponent(sentinelPassword)}@127.0.0.1:${s.port}`
    ),
    downAfterMs,
    failoverTimeoutMs,
    node(port) {
      const node = nodes.find((n) => n.port === port);
      if (node === undefined) throw new Error(`no data node on port ${port}`);
      return node;
    },
    async master() {
      const up = live();
      if (up.length === 0) throw new Error("no sentinel is running");
      return await askMaster(up[0]!);
    },
    role,
    cli: (port, ...args) => cli(port, args),
    async failover(timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      const from = await this.master();
      for (;;) {
        const reply = (await cli(live()[0]!.port, ["SENTINEL", "FAILOVER", name]))[0] ?? "";
        if (reply === "OK") break;
        if (!/INPROG|NOGOODSLAVE/.test(reply)) throw new Error(`SENTINEL FAILOVER ${name}: ${reply}`);
        if (Date.now() > deadline) throw new Error(`SENTINEL FAILOVER ${name} kept answering ${reply}`);
        await sleep(100);
      }
      for (;;) {
        const masters = await Promise.all(live().map(askMaster));
        const to = masters[0]!;
        if (to.port !== from.port && masters.every((m) => m.port === to.port) && (await role(to.port)) === "master") {
          return { from, to };
        }
        if (Date.now() > deadline) throw new Error(`failover of ${name} from ${from.port} not done in ${timeoutMs} ms`);
        await sleep(50);
      }
    },
    async waitSettled({ replicas = 2, timeoutMs = 30_000 } = {}) {
      await waitFor(() => unsettled(replicas), timeoutMs);
    },
    async demote(from, to) {
      const reply = await cli(from.port, ["REPLICAOF", to.host, String(to.port)]);
      if (!reply[0]?.startsWith("OK")) throw new Error(`REPLICAOF on ${from.port}: ${reply.join(" ")}`);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await Promise.all([...sentinels, ...nodes].map((s) => s.stop()));
    },
  };
}
