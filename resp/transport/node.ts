/**
 * A {@linkcode Transport} over node:net or node:tls (TCP, TLS or a unix
 * socket), with a connect timeout and TCP_NODELAY: Nagle's delay would hold
 * back every pipelined write.
 *
 * @module
 */
import { connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect, type ConnectionOptions } from "node:tls";
import { Buffer } from "node:buffer";
import { ConnectionError } from "../errors.ts";
import type { ResolvedOptions } from "../options.ts";
import { connectTimeout, describeTarget, type Transport, type TransportEvents } from "./types.ts";

/** The read buffer of a plain TCP or unix socket: node:net's own read size. */
const READ_BYTES = 64 * 1024;

/**
 * Open a socket and resolve once it is connected (for TLS: once the handshake
 * is done). Rejects with `ConnectionError` (cause: the socket error, or a
 * `TimeoutError` after `connectTimeoutMs`). Bytes received go to `data`
 * from the start.
 */
export function openSocket(o: ResolvedOptions, data: (chunk: Uint8Array) => void): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const target = describeTarget(o);
    let socket: Socket;
    const ready = o.tls ? "secureConnect" : "connect";
    if (o.tls) {
      const servername = o.tls.servername ?? (o.path || isIp(o.host) ? undefined : o.host);
      const where: ConnectionOptions = o.path ? { path: o.path } : { host: o.host, port: o.port };
      socket = tlsConnect({ ...where, ...(servername === undefined ? {} : { servername }), ...o.tls });
      socket.on("data", data);
    } else {
      // `onread`: the socket reads into one buffer of ours and calls back with
      // the byte count, instead of a new Buffer per read pushed through a
      // Readable stream and its 'data' event; the decoder copies whatever it
      // keeps, as the transport contract allows (the chunk may be reused).
      const buffer = Buffer.allocUnsafe(READ_BYTES);
      const onread = {
        buffer,
        callback: (n: number) => {
          data(buffer.subarray(0, n));
          // `false` would pause the socket: the decoder took the bytes already.
          return true;
        },
      };
      socket = o.path ? netConnect({ path: o.path, onread }) : netConnect({ host: o.host, port: o.port, onread });
    }
    const timer = setTimeout(() => {
      fail(connectTimeout(target, o.connectTimeoutMs));
    }, o.connectTimeoutMs);
    function cleanup() {
      clearTimeout(timer);
      socket.off("error", fail);
      socket.off(ready, ok);
    }
    function fail(cause: Error) {
      cleanup();
      socket.destroy();
      reject(new ConnectionError(`Cannot connect to ${target}: ${cause.message}`, { cause }));
    }
    function ok() {
      cleanup();
      socket.setNoDelay(true);
      socket.setKeepAlive(true, 30_000);
      resolve(socket);
    }
    socket.once("error", fail);
    socket.once(ready, ok);
  });
}

function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(":");
}

/**
 * Open a node:net/tls connection. Rejects like {@linkcode openSocket};
 * afterwards everything arrives through `events`.
 */
export async function openNodeTransport(o: ResolvedOptions, events: TransportEvents): Promise<Transport> {
  const socket = await openSocket(o, events.data);
  let lastError: Error | undefined;
  socket.on("drain", events.drain);
  socket.on("error", (error) => (lastError = error));
  socket.on("close", () => events.close(lastError));
  return {
    write: (bytes) => socket.write(bytes),
    // Node queues what the kernel did not take (holding the caller's bytes)
    // and counts it here; a write the kernel took whole leaves 0.
    flushed: () => socket.writableLength === 0,
    destroy: (error) => {
      if (error !== undefined) lastError = error;
      socket.destroy();
    },
  };
}
