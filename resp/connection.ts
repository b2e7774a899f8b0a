/**
 * Opening one socket to Redis: TCP, TLS or unix, with a connect timeout and
 * TCP_NODELAY (Nagle's delay would hold back every pipelined write).
 *
 * @module
 */
import { connect as netConnect, type Socket } from "node:net";
import { type ConnectionOptions, connect as tlsConnect } from "node:tls";
import { ConnectionError, TimeoutError } from "./errors.ts";
import type { ResolvedOptions } from "./options.ts";

/** Where the socket goes, for error messages. */
export function describeTarget(o: ResolvedOptions): string {
  if (o.path) return `unix:${o.path}`;
  return `${o.tls ? "rediss" : "redis"}://${o.host.includes(":") ? `[${o.host}]` : o.host}:${o.port}`;
}

/**
 * Open a socket and resolve once it is connected (for TLS: once the handshake
 * is done). Rejects with `ConnectionError` (cause: the socket error, or a
 * `TimeoutError` after `connectTimeoutMs`).
 */
export function openSocket(o: ResolvedOptions): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const target = describeTarget(o);
    let socket: Socket;
    const ready = o.tls ? "secureConnect" : "connect";
    if (o.tls) {
      const servername = o.tls.servername ?? (o.path || isIp(o.host) ? undefined : o.host);
      const where: ConnectionOptions = o.path ? { path: o.path } : { host: o.host, port: o.port };
      socket = tlsConnect({ ...where, ...(servername === undefined ? {} : { servername }), ...o.tls });
    } else {
      socket = o.path ? netConnect({ path: o.path }) : netConnect({ host: o.host, port: o.port });
    }
    const timer = setTimeout(() => {
      fail(new TimeoutError(`connect to ${target} timed out after ${o.connectTimeoutMs} ms`, o.connectTimeoutMs));
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
