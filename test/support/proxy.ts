/**
 * A TCP proxy on loopback in front of a real redis-server, for tests that need
 * to see or steer the bytes: count the client's writes, hold one direction
 * (backpressure, a server that stops answering), put the server further away
 * (latency, both directions, bytes kept in order), inject bytes, or cut every
 * connection. Nothing here imitates Redis: replies come from the real server.
 */
import { Buffer } from "node:buffer";
import { connect, createServer, type Server, type Socket } from "node:net";
import { listenLoopback } from "./listen.ts";

export interface Proxy {
  readonly port: number;
  readonly url: string;
  /** Chunks received from clients, in order (one entry per `data` event). */
  readonly clientChunks: Uint8Array[];
  /** Delay every chunk, both directions, by `ms` from now on (0: none); chunks keep their order. */
  delay(ms: number): void;
  /** Stop reading from clients (their writes back up) until `resume()`. */
  pause(): void;
  /**
   * Pause (as `pause()`) once clients have sent `bytes` more bytes: the chunk
   * that crosses the mark is forwarded, the rest waits (a large write caught
   * half-way). Resolves when that happened.
   */
  pauseAfter(bytes: number): Promise<void>;
  resume(): void;
  /** Stop forwarding replies to clients (the server seems hung). */
  holdReplies(): void;
  /**
   * Forward the next `bytes` bytes of replies, then hold the rest (as
   * `holdReplies()`): a reply whose header arrives and whose payload does not.
   */
  holdRepliesAfter(bytes: number): void;
  /** Forward what was held, each held chunk as it came. */
  releaseReplies(): void;
  /** Forward what was held to each client in one write, so it can arrive in one read. */
  releaseRepliesTogether(): void;
  /** The bytes held so far, as latin1 text (to wait for a frame to be among them). */
  heldText(): string;
  /** Send raw bytes to every connected client, as if the server had. */
  inject(bytes: Uint8Array | string): void;
  /** Destroy every open connection (both sides). */
  cut(): void;
  /** Open client connections. */
  readonly connections: number;
  close(): Promise<void>;
}

/**
 * One direction of one connection under latency: a FIFO with one timer, so a
 * chunk never overtakes an earlier one (timers of different durations could
 * fire out of order within a millisecond, which would corrupt the stream).
 */
class Lane {
  readonly #queue: { data: Uint8Array; due: number }[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  constructor(readonly to: Socket, readonly latency: { ms: number }) {}

  push(data: Uint8Array): void {
    if (this.#queue.length === 0 && this.latency.ms === 0) {
      this.to.write(data);
      return;
    }
    this.#queue.push({ data, due: performance.now() + this.latency.ms });
    if (this.#timer === undefined) this.#pump();
  }

  #pump(): void {
    this.#timer = undefined;
    const now = performance.now();
    while (this.#queue.length > 0 && this.#queue[0]!.due <= now) {
      const { data } = this.#queue.shift()!;
      if (!this.to.destroyed) this.to.write(data);
    }
    const head = this.#queue[0];
    if (head !== undefined) this.#timer = setTimeout(() => this.#pump(), Math.max(0, head.due - now));
  }

  clear(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#queue.length = 0;
  }
}

export async function startProxy(targetPort: number, targetHost = "127.0.0.1"): Promise<Proxy> {
  const pairs = new Set<{ client: Socket; server: Socket }>();
  const clientChunks: Uint8Array[] = [];
  let paused = false;
  let holding = false;
  /** Reply bytes still to forward before holding starts (`holdRepliesAfter`). */
  let passing: number | undefined;
  const latency = { ms: 0 };
  let pauseAt: { bytes: number; reached: () => void } | undefined;
  const held: { client: Socket; data: Uint8Array }[] = [];
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    // Latency is what the test sets, not Nagle's algorithm on small frames.
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const pair = { client, server: upstream };
    pairs.add(pair);
    const up = new Lane(upstream, latency);
    const down = new Lane(client, latency);
    if (paused) client.pause();
    client.on("data", (d) => {
      clientChunks.push(new Uint8Array(d));
      up.push(d);
      if (pauseAt !== undefined && (pauseAt.bytes -= d.length) <= 0) {
        const { reached } = pauseAt;
        pauseAt = undefined;
        paused = true;
        for (const p of pairs) p.client.pause();
        reached();
      }
    });
    upstream.on("data", (d: Buffer) => {
      if (passing !== undefined && !holding) {
        const pass = Math.min(passing, d.length);
        passing -= pass;
        if (pass > 0) down.push(d.subarray(0, pass));
        if (passing === 0) {
          passing = undefined;
          holding = true;
        }
        d = d.subarray(pass);
        if (d.length === 0) return;
      }
      if (holding) held.push({ client, data: d });
      else down.push(d);
    });
    const end = () => {
      up.clear();
      down.clear();
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end);
    upstream.on("close", end);
    client.on("error", end);
    upstream.on("error", end);
  });
  const port = await listenLoopback(server);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    clientChunks,
    get connections() {
      return pairs.size;
    },
    delay(ms) {
      latency.ms = ms;
    },
    pause() {
      paused = true;
      for (const p of pairs) p.client.pause();
    },
    pauseAfter(bytes) {
      return new Promise((reached) => (pauseAt = { bytes, reached }));
    },
    resume() {
      paused = false;
      for (const p of pairs) p.client.resume();
    },
    holdReplies() {
      holding = true;
    },
    holdRepliesAfter(bytes) {
      if (bytes === 0) holding = true;
      else passing = bytes;
    },
    releaseReplies() {
      holding = false;
      passing = undefined;
      for (const h of held.splice(0)) h.client.write(h.data);
    },
    releaseRepliesTogether() {
      holding = false;
      const byClient = new Map<Socket, Uint8Array[]>();
      for (const h of held.splice(0)) {
        const list = byClient.get(h.client) ?? [];
        list.push(h.data);
        byClient.set(h.client, list);
      }
      for (const [client, chunks] of byClient) client.write(Buffer.concat(chunks));
    },
    heldText() {
      return Buffer.concat(held.map((h) => h.data)).toString("latin1");
    },
    inject(bytes) {
      for (const p of pairs) p.client.write(bytes);
    },
    cut() {
      for (const p of pairs) {
        p.client.destroy();
        p.server.destroy();
      }
      pairs.clear();
    },
    close() {
      for (const p of pairs) {
        p.client.destroy();
        p.server.destroy();
      }
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
