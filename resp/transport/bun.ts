/**
 * A {@linkcode Transport} over `Bun.connect`, used only under Bun for plain
 * TCP and unix sockets. Bun's socket `write` returns how many bytes the kernel
 * took instead of buffering the rest, so the remainder is kept here, in
 * order, and written from the `drain` callback; `write` returns false until
 * it is gone, which is the same backpressure contract node:net gives.
 *
 * @module
 */
import { ConnectionError } from "../errors.ts";
import type { ResolvedOptions } from "../options.ts";
import { connectTimeout, describeTarget, type Transport, type TransportEvents } from "./types.ts";

interface BunSocket {
  write(data: Uint8Array): number;
  end(): void;
  terminate?(): void;
  setNoDelay?(noDelay: boolean): boolean;
  setKeepAlive?(enable: boolean, initialDelay?: number): boolean;
}

interface BunLike {
  connect(options: Record<string, unknown>): Promise<BunSocket>;
}

/**
 * Open a `Bun.connect` connection. Rejects with `ConnectionError` (cause:
 * the socket error, or a `TimeoutError` after `connectTimeoutMs`);
 * afterwards everything arrives through `events`.
 */
export async function openBunTransport(bun: unknown, o: ResolvedOptions, events: TransportEvents): Promise<Transport> {
  const target = describeTarget(o);
  let pending: Uint8Array[] = [];
  let lastError: Error | undefined;
  let closed = false;
  let opened = false;
  let socket: BunSocket | undefined;
  const close = () => {
    if (closed) return;
    closed = true;
    pending = [];
    if (opened) events.close(lastError);
  };
  const handlers = {
    data: (_s: BunSocket, chunk: Uint8Array) => {
      try {
        events.data(chunk);
      } catch (error) {
        transport.destroy(error as Error);
      }
    },
    drain: (s: BunSocket) => {
      while (pending.length > 0) {
        const head = pending[0]!;
        const n = s.write(head);
        if (n < head.length) {
          pending[0] = head.subarray(Math.max(0, n));
          return;
        }
        pending.shift();
      }
      events.drain();
    },
    error: (_s: BunSocket, error: Error) => {
      lastError = error;
    },
    close: () => close(),
    end: () => close(),
  };
  const where = o.path ? { unix: o.path } : { hostname: o.host, port: o.port };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(connectTimeout(target, o.connectTimeoutMs));
    }, o.connectTimeoutMs);
  });
  const connecting = (bun as BunLike).connect({ ...where, socket: handlers });
  try {
    socket = await Promise.race([connecting, timeout]);
  } catch (cause) {
    // A connection that completes after the timeout must not linger.
    connecting.then((s) => s.end(), () => {});
    const error = cause as Error;
    throw new ConnectionError(`Cannot connect to ${target}: ${error.message}`, { cause: error });
  } finally {
    clearTimeout(timer);
  }
  opened = true;
  socket.setNoDelay?.(true);
  // As on node:net: notice a half-open connection even when no command has a timeout.
  socket.setKeepAlive?.(true, 30_000);
  const s = socket;
  const transport: Transport = {
    write(bytes) {
      if (closed) return true;
      if (pending.length > 0) {
        pending.push(bytes);
        return false;
      }
      const n = s.write(bytes);
      if (n >= bytes.length) return true;
      pending.push(bytes.subarray(Math.max(0, n)));
      return false;
    },
    // Bun's socket buffers nothing of ours: what the kernel did not take is in `pending`.
    flushed: () => pending.length === 0,
    destroy(error) {
      if (error !== undefined) lastError = error;
      if (s.terminate) s.terminate();
      else s.end();
      // Bun calls close() for a terminated socket too; this makes it certain and immediate.
      close();
    },
  };
  if (closed) {
    // Closed between connecting and here: report it once the caller holds
    // the transport (after its await resumes), or it would ignore the event.
    closed = false;
    setTimeout(close, 0);
  }
  return transport;
}
