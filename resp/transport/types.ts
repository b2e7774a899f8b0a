/**
 * What the client needs of a socket, and nothing else: the leaf that both
 * transports (node:net/tls in `node.ts`, `Bun.connect` in
 * `bun.ts`) implement and that `open.ts` chooses between.
 * It imports no implementation but the errors (a leaf), so no import cycle can form through it.
 *
 * @module
 */
import type { ResolvedOptions } from "../options.ts";
import { TimeoutError, timeoutMessage } from "../errors.ts";

/** What the client needs of a connection. */
export interface Transport {
  /** Queue bytes for the socket; `false` means "full: wait for `drain` before writing more". */
  write(bytes: Uint8Array): boolean;
  /**
   * True when every byte written so far has reached the kernel: no view of
   * them is kept any more, so their memory may be reused.
   */
  flushed(): boolean;
  /** Close at once; `close` follows with `error` as its cause. */
  destroy(error?: Error): void;
}

/** The connection's events. `close` comes exactly once, last. */
export interface TransportEvents {
  /** Bytes from the server, in order; the chunk may be reused once this returns. */
  data(chunk: Uint8Array): void;
  /** The socket took every byte queued after `write` returned `false`. */
  drain(): void;
  /** The socket is gone; `error` is why, when there was an error. */
  close(error: Error | undefined): void;
}

/** The server as traces name it: `host:port` (IPv6 bracketed), or the unix socket path. */
export function serverName(o: ResolvedOptions): string {
  if (o.path) return o.path;
  return `${o.host.includes(":") ? `[${o.host}]` : o.host}:${o.port}`;
}

/**
 * The URL the client connects with, as an error message may show it: the
 * user name kept, the password replaced by `***`, the database when not 0.
 */
export function describeUrl(o: ResolvedOptions): string {
  const auth = o.username === undefined && o.password === undefined
    ? ""
    : `${o.username === undefined ? "" : encodeURIComponent(o.username)}${o.password === undefined ? "" : ":***"}@`;
  if (o.path) return `unix://${auth}${o.path}${o.db === 0 ? "" : `?db=${o.db}`}`;
  const host = o.host.includes(":") ? `[${o.host}]` : o.host;
  return `${o.tls ? "rediss" : "redis"}://${auth}${host}:${o.port}${o.db === 0 ? "" : `/${o.db}`}`;
}

/** Where the socket goes, for error messages. */
export function describeTarget(o: ResolvedOptions): string {
  if (o.path) return `unix:${o.path}`;
  return `${o.tls ? "rediss" : "redis"}://${o.host.includes(":") ? `[${o.host}]` : o.host}:${o.port}`;
}

/** The error of a socket not open within `connectTimeoutMs`, as every transport words it. */
export function connectTimeout(target: string, connectTimeoutMs: number): TimeoutError {
  return new TimeoutError(
    timeoutMessage(`Connecting to ${target}`, "connectTimeoutMs", connectTimeoutMs),
    connectTimeoutMs,
    {
      setting: "connectTimeoutMs",
      timeoutMs: connectTimeoutMs,
    },
  );
}
