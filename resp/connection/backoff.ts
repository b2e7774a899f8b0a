/**
 * The delay before reconnect attempt `attempt` (0-based): capped exponential,
 * jittered over the upper half, `[ceiling / 2, ceiling]` with
 * `ceiling = min(maxMs, minMs * 2^attempt)`. The jitter keeps a fleet of
 * clients that lost the same server from returning in step; the lower half is
 * left out so a retry is never much sooner than the backoff intends.
 */
export function reconnectDelay(
  attempt: number,
  limits: { minMs: number; maxMs: number },
  random: () => number,
): number {
  const ceiling = Math.min(limits.maxMs, limits.minMs * 2 ** Math.min(attempt, 30));
  return ceiling / 2 + random() * (ceiling / 2);
}
