/**
 * Opening one connection to Redis: TCP, TLS or unix. Under Bun a plain TCP
 * or unix connection uses `Bun.connect`, which measured faster than Bun's
 * node:net there (bench/README.md); TLS keeps node:tls everywhere.
 *
 * @module
 */
import type { ResolvedOptions } from "./options.ts";
import type { Transport, TransportEvents } from "./_transport.ts";
import { openBunTransport } from "./_transport_bun.ts";
import { openNodeTransport } from "./_transport_node.ts";

/**
 * Open a connection for the client. Rejects with `ConnectionError` (cause:
 * the socket error, or a `TimeoutError` after `connectTimeoutMs`);
 * afterwards everything arrives through `events`.
 */
export function openTransport(o: ResolvedOptions, events: TransportEvents): Promise<Transport> {
  const bun = (globalThis as { Bun?: unknown }).Bun;
  if (bun !== undefined && o.tls === undefined) return openBunTransport(bun, o, events);
  return openNodeTransport(o, events);
}
