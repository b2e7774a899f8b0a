/**
 * Disposable redis-server processes for tests: a free loopback port, no
 * persistence, `DEBUG` enabled for local clients (so `DEBUG PROTOCOL` can
 * produce every RESP3 type), PING-checked before use and stopped afterwards.
 * Works unchanged on Node, Bun and Deno (node:child_process, node:net).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createServer, Socket } from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { listenLoopback } from "./listen.ts";

/** A redis-server started by {@linkcode startRedis}. */
export interface RedisServer {
  readonly host: string;
  readonly port: number;
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  /** Its working directory (TLS files, unix socket). */
  readonly dir: string;
  readonly pid: number | undefined;
  /** Send a signal to the process (SIGKILL to crash it, SIGSTOP/SIGCONT to pause it). */
  signal(signal: NodeJS.Signals): void;
  /** Kill it and wait until it has exited. */
  kill(): Promise<void>;
  /** Start it again on the same port (after kill) and wait for PING. */
  restart(): Promise<void>;
  /** Run redis-cli against it and return stdout (throws on a non-zero exit). */
  cli(...args: string[]): string;
  /** Stop it (SHUTDOWN NOSAVE, then SIGKILL) and remove its directory. */
  stop(): Promise<void>;
}

/** Options for {@linkcode startRedis}. */
export interface StartRedisOptions {
  /** Extra redis-server arguments, e.g. `["--requirepass", "x"]`. */
  args?: string[];
  /** Listen on this port instead of a free one. */
  port?: number;
  /** Wait for PING over TLS instead: the server must then listen with tls-port. */
  tlsOnly?: boolean;
  /**
   * A config file's text, written to `redis.conf` in the server's directory
   * and loaded first (a sentinel needs a file it can rewrite: it keeps what
   * it learned there, across a restart).
   */
  config?: string;
  /** Start it as a sentinel (`--sentinel`, the same binary). */
  sentinel?: boolean;
}

const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of live) sendSignal(child, "SIGKILL");
});

// process.kill by pid rather than child.kill: Deno's ChildProcess ignores a
// second kill() (so SIGSTOP then SIGKILL would leave the server running).
function sendSignal(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(child.pid, signal);
  } catch {
    // Already gone.
  }
}

/** The redis-server binary: `REDIS_SERVER`, else `redis-server` on PATH. */
export function redisServerBinary(): string {
  const bin = process.env.REDIS_SERVER ?? "redis-server";
  const probe = spawnSync(bin, ["--version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      `Cannot start redis-server: '${bin}' was not found or failed (${probe.error?.message ?? probe.stderr}). ` +
        "Install redis-server (>= 6.2) on PATH, or set REDIS_SERVER to its path.",
    );
  }
  return bin;
}

/**
 * The cli next to the server binary (`valkey-cli` beside `valkey-server`,
 * `redis-cli` beside `redis-server`), else `redis-cli` on PATH.
 */
export function redisCliBinary(): string {
  const server = process.env.REDIS_SERVER;
  const beside = server?.includes("/") ? /^(.*\/(?:redis|valkey))-server$/.exec(server) : null;
  return beside ? `${beside[1]}-cli` : "redis-cli";
}

/** True when the server binary was built with TLS (it accepts `tls-port`). */
export function serverSupportsTls(): boolean {
  // tls-port 0 keeps TLS off, but a build without TLS refuses the directive itself.
  const out = spawnSync(redisServerBinary(), ["--port", "0", "--tls-port", "0", "--save", ""], {
    encoding: "utf8",
    timeout: 1000,
    killSignal: "SIGKILL",
  });
  return !/Bad directive|not supported/i.test(`${out.stdout}${out.stderr}`);
}

// Worker k of n (the test runner's worker processes) takes only ports p with
// floor(p / 2) % n === k, so two workers never pick one port for their
// servers. Halved because Linux hands out odd ports for bind(0), and so that
// a cluster's bus port (p + 10000) keeps p's share when n is 2.
const worker = Number(process.env.HERDLESS_TEST_WORKER ?? 0);
const workers = Number(process.env.HERDLESS_TEST_WORKERS ?? 1);

async function listenAnywhere(): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer();
  server.unref();
  const port = await listenLoopback(server);
  return { port, close: () => new Promise((done) => server.close(() => done())) };
}

/** A TCP port on 127.0.0.1 that was free a moment ago (of this worker's share, in a parallel run). */
export async function freePort(): Promise<number> {
  // Ports of another worker's share stay open until one is found, so the next try gets another.
  const others: { close(): Promise<void> }[] = [];
  try {
    for (;;) {
      const candidate = await listenAnywhere();
      if (workers <= 1 || Math.floor(candidate.port / 2) % workers === worker) {
        await candidate.close();
        return candidate.port;
      }
      others.push(candidate);
    }
  } finally {
    await Promise.all(others.map((o) => o.close()));
  }
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    let buf = "";
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on("error", () => done(false));
    socket.on("data", (d) => {
      buf += d.toString();
      if (buf.includes("\r\n")) done(buf.startsWith("+PONG") || buf.startsWith("-NOAUTH"));
    });
    socket.connect(port, "127.0.0.1", () => socket.write("PING\r\n"));
  });
}

async function waitForPing(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}: ${log()}`);
    if (await ping(port)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`redis-server on port ${port} did not answer PING within 10 s: ${log()}`);
}

/**
 * Start a disposable redis-server on a free loopback port.
 *
 * @example
 * ```ts
 * const server = await startRedis();
 * try { console.log(server.url); } finally { await server.stop(); }
 * ```
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  const bin = redisServerBinary();
  const dir = mkdtempSync(join(tmpdir(), "herdless-redis-"));
  const port = options.port ?? (await freePort());
  const config = options.config === undefined ? [] : [join(dir, "redis.conf")];
  if (options.config !== undefined) writeFileSync(join(dir, "redis.conf"), options.config);
  const args = [
    ...config,
    ...(options.sentinel ? ["--sentinel"] : []),
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    dir,
    "--enable-debug-command",
    "local",
    "--unixsocket",
    join(dir, "redis.sock"),
    ...(options.args ?? []),
  ];
  let child!: ChildProcess;
  let output = "";
  const launch = async () => {
    child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    live.add(child);
    child.stdout?.on("data", (d) => (output = (output + d).slice(-4000)));
    child.stderr?.on("data", (d) => (output = (output + d).slice(-4000)));
    child.on("exit", () => live.delete(child));
    if (options.tlsOnly) {
      // A TLS-only server cannot be PINGed in clear text; wait for its log line instead.
      const deadline = Date.now() + 10_000;
      while (!/Ready to accept connections/.test(output)) {
        if (child.exitCode !== null || Date.now() > deadline) {
          throw new Error(`redis-server (TLS) did not start: ${output}`);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    } else {
      await waitForPing(port, child, () => output);
    }
  };
  const exited = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once("exit", () => resolve());
    });
  await launch();
  const cliBin = redisCliBinary();
  return {
    host: "127.0.0.1",
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    get pid() {
      return child.pid;
    },
    signal(signal) {
      sendSignal(child, signal);
    },
    async kill() {
      sendSignal(child, "SIGKILL");
      await exited();
    },
    async restart() {
      if (child.exitCode === null && child.signalCode === null) {
        sendSignal(child, "SIGKILL");
        await exited();
      }
      await launch();
    },
    cli(...cliArgs) {
      const r = spawnSync(cliBin, ["-p", String(port), ...cliArgs], { encoding: "utf8", timeout: 10_000 });
      if (r.status !== 0) throw new Error(`redis-cli ${cliArgs.join(" ")} failed: ${r.stderr}${r.error ?? ""}`);
      return r.stdout;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        sendSignal(child, "SIGKILL");
        await exited();
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
