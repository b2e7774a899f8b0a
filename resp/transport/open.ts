/**
 * The runtime's pick of a transport: the one place that knows which
 * transports exist, so a new one (`cloudflare:sockets`) is one branch here.
 *
 * @module
 */
import type { ResolvedOptions } from "../options.ts";
import { openBunTransport } from "./bun.ts";
import { openCloudflareTransport } from "./cloudflare.ts";
import { isWorkerd } from "../shared/mod.ts";
import { openNodeTransport } from "./node.ts";
import type { Transport, TransportEvents } from "./types.ts";

/**
 * Open a transport for the client. Under workerd (Cloudflare Workers) it is
 * the `connect()` of `cloudflare:sockets`. Under Bun a plain TCP or unix connection
 * uses `Bun.connect`, which measured faster than Bun's node:net there
 * (bench/README.md); TLS keeps node:tls everywhere. Rejects with
 * `ConnectionError` (cause: the socket error, or a `TimeoutError` after
 * `connectTimeoutMs`); afterwards everything arrives through `events`.
 */
export function openTransport(o: ResolvedOptions, events: TransportEvents): Promise<Transport> {
  if (isWorkerd()) return openCloudflareTransport(o, events);
  const bun = (globalThis as { Bun?: unknown }).Bun;
  if (bun !== undefined && o.tls === undefined) return openBunTransport(bun, o, events);
  return openNodeTransport(o, events);
}
