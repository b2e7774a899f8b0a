/**
 * Byte pipes to a Redis server: node:net/node:tls, `Bun.connect`, and the
 * runtime's pick between them ({@linkcode openTransport}).
 *
 * @module
 */
export { openTransport } from "./open.ts";
export { describeTarget, describeUrl, serverName, type Transport, type TransportEvents } from "./types.ts";
