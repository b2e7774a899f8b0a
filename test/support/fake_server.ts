/**
 * A misbehaving "Redis" on loopback, for fault tests of the client: it reads
 * the client's commands (RESP arrays of bulk strings) and answers each with
 * whatever bytes the test chooses: garbage, truncated frames, absurd
 * lengths, or a closed socket mid-reply. Nothing here imitates Redis
 * behaviour; it only produces byte streams a real server never would.
 */
import { createServer, type Server, type Socket } from "node:net";
import { listenLoopback } from "./listen.ts";

/** What the fake server does with one command. */
export type FakeAction =
  /** Write these bytes (a string is written as latin1, byte for byte). */
  | { write: string | Uint8Array }
  /** Write these bytes, then close the connection. */
  | { write: string | Uint8Array; close: true }
  /** Close the connection without a reply. */
  | { close: true }
  /** Write these bytes `count` times, one write after another drains (a reply that goes on and on). */
  | { stream: string | Uint8Array; count: number }
  /** Say nothing. */
  | { silent: true };

/** Decides what to do with each command; `connection` counts from 0, `index` is the command's place on it. */
export type FakeHandler = (
  command: string[],
  info: { connection: number; index: number; socket: Socket },
) => FakeAction;

export interface FakeServer {
  readonly port: number;
  readonly url: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Every command received, in order. */
  readonly commands: string[][];
  close(): Promise<void>;
}

function bytes(data: string | Uint8Array): Uint8Array {
  return typeof data === "string" ? Uint8Array.from(data, (c) => c.charCodeAt(0) & 0xff) : data;
}

/** Split complete RESP arrays of bulk strings off `buf`; returns the commands and the bytes left over. */
function parseCommands(buf: Uint8Array): [string[][], Uint8Array] {
  const out: string[][] = [];
  const latin1 = new TextDecoder("latin1");
  let pos = 0;
  const line = (from: number): [string, number] | undefined => {
    for (let i = from; i + 1 < buf.length; i++) {
      if (buf[i] === 13 && buf[i + 1] === 10) return [latin1.decode(buf.subarray(from, i)), i + 2];
    }
    return undefined;
  };
  for (;;) {
    const head = line(pos);
    if (head === undefined || !head[0].startsWith("*")) break;
    const n = Number(head[0].slice(1));
    let at = head[1];
    const args: string[] = [];
    let complete = true;
    for (let i = 0; i < n; i++) {
      const len = line(at);
      if (len === undefined) {
        complete = false;
        break;
      }
      const size = Number(len[0].slice(1));
      if (len[1] + size + 2 > buf.length) {
        complete = false;
        break;
      }
      args.push(new TextDecoder().decode(buf.subarray(len[1], len[1] + size)));
      at = len[1] + size + 2;
    }
    if (!complete) break;
    out.push(args);
    pos = at;
  }
  return [out, buf.subarray(pos)];
}

/**
 * Start a fake server on a free loopback port.
 *
 * @example
 * ```ts
 * const fake = await startFakeServer(() => ({ write: "+OK\r\n" }));
 * try { console.log(fake.url); } finally { await fake.close(); }
 * ```
 */
export async function startFakeServer(handler: FakeHandler): Promise<FakeServer> {
  const sockets = new Set<Socket>();
  const commands: string[][] = [];
  let connections = 0;
  const server: Server = createServer((socket) => {
    const connection = connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let pending: Uint8Array = new Uint8Array(0);
    let index = 0;
    socket.on("data", (chunk: Uint8Array) => {
      const joined = new Uint8Array(pending.length + chunk.length);
      joined.set(pending);
      joined.set(chunk, pending.length);
      const [parsed, rest] = parseCommands(joined);
      pending = rest.slice();
      for (const command of parsed) {
        commands.push(command);
        if (socket.destroyed) return;
        const action = handler(command, { connection, index: index++, socket });
        if ("stream" in action) {
          const piece = bytes(action.stream);
          let left = action.count;
          const pump = () => {
            if (socket.destroyed || left-- <= 0) return;
            socket.write(piece, () => setImmediate(pump));
          };
          pump();
        } else if ("write" in action) {
          socket.write(bytes(action.write));
          if ("close" in action) socket.end();
        } else if ("close" in action) {
          socket.destroy();
        }
      }
    });
  });
  const port = await listenLoopback(server);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get connections() {
      return connections;
    },
    commands,
    close: () =>
      new Promise<void>((done) => {
        for (const s of sockets) s.destroy();
        server.close(() => done());
      }),
  };
}
