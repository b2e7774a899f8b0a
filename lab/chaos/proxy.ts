/**
 * A TCP proxy on loopback between the workers and the cache server that can
 * add latency, stall both directions, or drop every connection. Bytes are
 * never reordered or lost while delayed or stalled: each direction of each
 * connection is a FIFO lane that releases a chunk once it is due.
 * (test/support/proxy.ts holds one direction of replies for tests; this one
 * adds timed latency, both-direction stalls and a connection count.)
 *
 * @module
 */
import { connect, createServer, type Socket } from "node:net";

/** The proxy's controls. */
export interface FaultProxy {
  readonly url: string;
  /** Open client connections. */
  readonly connections: number;
  /** Delay every chunk, both directions, by this many ms from now on (0: none). */
  delay(ms: number): void;
  /** Hold every chunk, both directions, until `resume()`; then deliver them in order. */
  stall(): void;
  resume(): void;
  /** Destroy every open connection, both sides. */
  drop(): void;
  close(): Promise<void>;
}

/** One direction of one connection: chunks leave in order, each no earlier than its due time. */
class Lane {
  readonly #queue: { data: Buffer; due: number }[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  constructor(readonly to: Socket, readonly state: { delayMs: number; stalled: boolean }) {}

  push(data: Buffer): void {
    if (this.#queue.length === 0 && this.state.delayMs === 0 && !this.state.stalled) {
      this.to.write(data);
      return;
    }
    this.#queue.push({ data, due: performance.now() + this.state.delayMs });
    this.pump();
  }

  pump(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.state.stalled || this.to.destroyed) return;
    const now = performance.now();
    while (this.#queue.length > 0 && this.#queue[0]!.due <= now) this.to.write(this.#queue.shift()!.data);
    const head = this.#queue[0];
    if (head !== undefined) this.#timer = setTimeout(() => this.pump(), head.due - now);
  }

  clear(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#queue.length = 0;
  }
}

/** Start a proxy on a free loopback port in front of `127.0.0.1:targetPort`. */
export function startFaultProxy(targetPort: number): Promise<FaultProxy> {
  const state = { delayMs: 0, stalled: false };
  const pairs = new Set<{ client: Socket; server: Socket; lanes: Lane[] }>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, "127.0.0.1");
    // A proxy must not add Nagle's delay to small RESP frames.
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const up = new Lane(upstream, state);
    const down = new Lane(client, state);
    const pair = { client, server: upstream, lanes: [up, down] };
    pairs.add(pair);
    client.on("data", (d) => up.push(d));
    upstream.on("data", (d) => down.push(d));
    const end = () => {
      pairs.delete(pair);
      up.clear();
      down.clear();
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) {
      socket.on("close", end);
      socket.on("error", end);
    }
  });
  const each = (fn: (pair: { client: Socket; server: Socket; lanes: Lane[] }) => void) => [...pairs].forEach(fn);
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      resolve({
        url: `redis://127.0.0.1:${port}`,
        get connections() {
          return pairs.size;
        },
        delay(ms) {
          state.delayMs = ms;
        },
        stall() {
          state.stalled = true;
        },
        resume() {
          state.stalled = false;
          each((p) => p.lanes.forEach((lane) => lane.pump()));
        },
        drop() {
          each((p) => {
            p.client.destroy();
            p.server.destroy();
          });
        },
        close() {
          each((p) => {
            p.client.destroy();
            p.server.destroy();
          });
          return new Promise<void>((r) => server.close(() => r()));
        },
      });
    });
  });
}

/**
 * One set of controls over several proxies: every delay, stall and drop acts on all of them, while `url` and
 * `connections` are the first's. The workerd client has its own proxy, so that the workers' connection count (what
 * the leak check compares) stays theirs, yet it lives through the same network faults.
 */
export function fanOut(first: FaultProxy, ...others: FaultProxy[]): FaultProxy {
  const all = [first, ...others];
  return {
    url: first.url,
    get connections() {
      return first.connections;
    },
    delay: (ms) => all.forEach((p) => p.delay(ms)),
    stall: () => all.forEach((p) => p.stall()),
    resume: () => all.forEach((p) => p.resume()),
    drop: () => all.forEach((p) => p.drop()),
    close: async () => void await Promise.all(all.map((p) => p.close())),
  };
}
