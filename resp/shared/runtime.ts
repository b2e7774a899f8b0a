/**
 * Which runtime runs this code, where the answer changes a default (not
 * only a transport): kept apart from the transports, so the options can ask
 * without importing them.
 *
 * @module
 */

/** True under workerd (Cloudflare Workers), whose `navigator.userAgent` is fixed to "Cloudflare-Workers". */
export function isWorkerd(): boolean {
  return (globalThis as { navigator?: { userAgent?: unknown } }).navigator?.userAgent === "Cloudflare-Workers";
}
