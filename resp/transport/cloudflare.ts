/**
 * A {@linkcode Transport} over the `connect()` of `cloudflare:sockets`
 * (Web Streams), used under workerd (Cloudflare Workers). workerd's
 * `node:net` drops every read after the first when a socket reads into a
 * buffer of its own (`onread`), and its sockets are Web Streams underneath
 * anyway. The module is reached by a dynamic import of a computed name, so
 * type checkers and other runtimes never resolve `cloudflare:sockets`.
 *
 * @module
 */
import { ConnectionError } from "../errors.ts";
import type { ResolvedOptions } from "../options.ts";
import { connectTimeout, describeTarget, type Transport, type TransportEvents } from "./types.ts";

/** What herdless uses of a `cloudflare:sockets` socket. */
interface CloudflareSocket {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  readonly opened: Promise<unknown>;
  close(): Promise<void>;
}

type CloudflareConnect = (
  address: { hostname: string; port: number },
  options: { secureTransport: "on" | "off"; allowHalfOpen: boolean },
) => CloudflareSocket;

/**
 * The option workerd's `connect()` cannot honour, if any: it has no unix
 * sockets, and its TLS verifies the server against the public CAs with the
 * host name as SNI, with no client certificate.
 */
export function unsupportedOption(o: ResolvedOptions): string | undefined {
  if (o.path) return "path";
  const tls = o.tls as Record<string, unknown> | undefined;
  if (tls === undefined) return undefined;
  for (const name of ["ca", "cert", "key", "pfx", "passphrase", "checkServerIdentity", "secureContext"]) {
    if (tls[name] !== undefined) return `tls.${name}`;
  }
  if (tls.rejectUnauthorized === false) return "tls.rejectUnauthorized";
  if (tls.servername !== undefined && tls.servername !== o.host) return "tls.servername";
  return undefined;
}

/**
 * Open a `cloudflare:sockets` connection. Rejects with a `TypeError` naming
 * an option workerd cannot honour, or with `ConnectionError` (cause: the
 * socket error, or a `TimeoutError` after `connectTimeoutMs`); afterwards
 * everything arrives through `events`.
 */
export async function openCloudflareTransport(o: ResolvedOptions, events: TransportEvents): Promise<Transport> {
  const option = unsupportedOption(o);
  if (option !== undefined) {
    throw new TypeError(
      `Cannot connect: '${option}' is not supported on Cloudflare Workers (connect() of cloudflare:sockets has ${
        option === "path"
          ? "no unix sockets"
          : "TLS to publicly trusted servers only, by host name, without client certificates"
      })`,
    );
  }
  const target = describeTarget(o);
  const specifier = "cloudflare:sockets";
  const { connect } = (await import(specifier)) as { connect: CloudflareConnect };
  const socket = connect({ hostname: o.host, port: o.port }, {
    secureTransport: o.tls ? "on" : "off",
    allowHalfOpen: false,
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(connectTimeout(target, o.connectTimeoutMs));
    }, o.connectTimeoutMs);
  });
  try {
    await Promise.race([socket.opened, timeout]);
  } catch (cause) {
    socket.close().catch(() => {});
    const error = cause instanceof Error ? cause : new Error(String(cause));
    throw new ConnectionError(`Cannot connect to ${target}: ${error.message}`, { cause: error });
  } finally {
    clearTimeout(timer);
  }
  return streamTransport(socket, events);
}

/** The transport over an opened socket: a read loop, and writes held by the stream until it takes them. */
function streamTransport(socket: CloudflareSocket, events: TransportEvents): Transport {
  const writer = socket.writable.getWriter();
  const reader = socket.readable.getReader();
  let lastError: Error | undefined;
  let closed = false;
  /** Writes handed to the stream and not yet taken by the socket: their bytes must not be reused. */
  let inFlight = 0;
  let waitingDrain = false;
  const close = () => {
    if (closed) return;
    closed = true;
    reader.cancel().catch(() => {});
    socket.close().catch(() => {});
    events.close(lastError);
  };
  const fail = (error: unknown) => {
    lastError ??= error instanceof Error ? error : new Error(String(error));
    close();
  };
  const written = () => {
    inFlight--;
    if (waitingDrain && !closed && inFlight === 0) {
      waitingDrain = false;
      events.drain();
    }
  };
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done || closed) break;
        events.data(value);
      }
      close();
    } catch (error) {
      fail(error);
    }
  })();
  return {
    write(bytes) {
      if (closed) return true;
      inFlight++;
      writer.write(bytes).then(written, fail);
      // The stream holds the bytes until the socket takes them; past its
      // high-water mark the connection holds later commands until drain.
      if ((writer.desiredSize ?? 0) > 0) return true;
      waitingDrain = true;
      return false;
    },
    flushed: () => inFlight === 0,
    destroy(error) {
      if (error !== undefined) lastError ??= error;
      close();
    },
  };
}
