/**
 * `lease()`: one owner across every process sharing the Redis server.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { clearInterval, setInterval } from "node:timers";
import { boolean, checkedOptions, positiveInt, timeoutOptions } from "../resp/shared/mod.ts";
import { TimeoutError, timeoutMessage } from "../resp/errors.ts";
import { releaseLease, renewLease } from "./_lease_scripts.ts";
import type { CacheContext, Fill, FillRequest, Outcome, Strategy, Ticket } from "./contract.ts";

/** Options of {@linkcode lease}. */
export interface LeaseOptions {
  /**
   * How long a lease lasts before Redis drops it. It must outlast a normal
   * load (or set `renew`): an owner whose lease expires before it publishes
   * is rejected, and a crashed owner blocks waiters for at most this long.
   * @default {1500}
   */
  leaseMs?: number;
  /** How long a caller waits for another owner's load before a `TimeoutError` (never an origin call). @default {2000} */
  waitMs?: number;
  /**
   * Extend the lease (token-checked) every `leaseMs / 3` while the loader
   * runs, up to `maxHoldMs`. The renewal's timer never keeps a process alive.
   * @default {false}
   */
  renew?: boolean;
  /**
   * With `renew`, the longest an owner holds the lease, from when it took it:
   * renewal stops there, so a loader that ignores its signal and never
   * settles keeps the key from other processes for this long at most; one
   * of them then takes over and loads (the hung owner's publication, if it
   * ever comes, is rejected). Until then their gets of the key wait and
   * fail at `waitMs`: with the default `leaseMs` of 1,500 the ceiling is
   * 15,000 ms, longer than the default `waitMs` of 2,000, so behind a hung
   * loader other processes may fail for up to 15 s. At least `leaseMs`;
   * only with `renew: true`.
   * @default {10 * leaseMs}
   */
  maxHoldMs?: number;
  /**
   * The longest a waiter goes without looking at the key again when no
   * announcement wakes it; each pause is drawn in [pollMs / 2, pollMs].
   * Unset, it is 50 when waiters can only poll (a RESP2 client, an adapter,
   * `wakeups: "poll"`) and 250 when publications arrive by push (polling then
   * only covers a lost message or an expired lease, which announces
   * nothing), either capped at `leaseMs`. A value given here is used as is:
   * a crashed owner is then noticed up to `pollMs` after its lease expired.
   * @default {50 (polling only) | 250 (push wake-ups)}
   */
  pollMs?: number;
}

/** Every option of {@linkcode LeaseOptions}: any other key is refused, naming the close one. */
const LEASE_OPTIONS = Object.keys(
  { leaseMs: true, waitMs: true, renew: true, maxHoldMs: true, pollMs: true } satisfies Record<
    keyof LeaseOptions,
    true
  >,
);

/** The strategy {@linkcode lease} returns, with its settings. */
export interface LeaseStrategy extends Strategy {
  /** Always `"lease"`. */
  readonly name: "lease";
  /** The `leaseMs` option: how long a won lease lasts before another caller may take over, in ms. */
  readonly leaseMs: number;
  /** The `waitMs` option: how long a caller waits for another owner before a `TimeoutError`, in ms. */
  readonly waitMs: number;
  /** The `renew` option: whether an owner extends its lease while its load runs. */
  readonly renew: boolean;
  /** The `maxHoldMs` option: the longest an owner holds the lease by renewing it, in ms. */
  readonly maxHoldMs: number;
  /** The `pollMs` option; `undefined` for the defaults (50 polling only, 250 with push). */
  readonly pollMs: number | undefined;
}

// How often a waiter looks again when no announcement came (the `pollMs`
// defaults): often when it relies on polling, rarely when announcements
// arrive by push (polling then only covers a lost message or an expired
// lease, which announces nothing).
const POLL_MS = 50;
const PUSH_POLL_MS = 250;

/**
 * Cross-process single flight through a Redis lease.
 *
 * A caller that misses takes the lease with `SET lease token NX PX leaseMs`,
 * sent in the same round trip as a re-read of the data key, so a value
 * published between its first read and the lease is used instead of loaded
 * again. The owner loads and publishes through one script that stores the
 * value only while its token still holds the lease; if it fails, it releases
 * the lease at once so a waiter can take over. Other callers wait: woken by
 * the publication (pub/sub push on a RESP3 connection) or by polling with
 * jitter, until `waitMs` or their own timeout or signal runs out; then they
 * get a `TimeoutError` and the origin is never called for them. A background
 * refresh that finds the lease taken does nothing: someone is refreshing.
 * A "not found" is shared with waiters only when it is cached
 * (`negativeTtlMs` > 0); otherwise they take the lease in turn and load again.
 *
 * @param options lease duration, wait limit and renewal.
 * @returns a strategy for {@linkcode pipeline}; one object per cache.
 * @throws {RangeError} when `leaseMs`, `waitMs`, `pollMs` or `maxHoldMs` is not a positive integer, or
 * `maxHoldMs` is under `leaseMs`.
 * @throws {TypeError} when `renew` is not a boolean, or `maxHoldMs` is given without `renew: true`.
 * @example One origin call across processes
 * ```ts
 * import { coalesce, connect, lease, pipeline } from "@herdless/herdless";
 * const redis = await connect({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", resp: 3 });
 * const cache = pipeline({ redis, ttlMs: 60_000 }, coalesce(), lease({ leaseMs: 3000, waitMs: 5000 }));
 * console.log(await cache.get("report", () => "expensive"));
 * await cache.close();
 * await redis.close();
 * ```
 */
export function lease(options?: LeaseOptions): LeaseStrategy {
  const o = checkedOptions<LeaseOptions>("create lease", "lease()", options, LEASE_OPTIONS);
  const leaseMs = positiveInt("create lease", "leaseMs", o.leaseMs ?? 1500);
  const waitMs = positiveInt("create lease", "waitMs", o.waitMs ?? 2000);
  const renew = boolean("create lease", "renew", o.renew ?? false);
  const pollMs = o.pollMs === undefined ? undefined : positiveInt("create lease", "pollMs", o.pollMs);
  const maxHoldMs = positiveInt("create lease", "maxHoldMs", o.maxHoldMs ?? 10 * leaseMs);
  if (o.maxHoldMs !== undefined && !renew) {
    throw new TypeError(
      "Cannot create lease: 'maxHoldMs' bounds renewal and needs 'renew: true' (without it a lease lasts leaseMs)",
    );
  }
  if (maxHoldMs < leaseMs) {
    throw new RangeError(
      `Cannot create lease: 'maxHoldMs' (${maxHoldMs}) must be at least 'leaseMs' (${leaseMs})`,
    );
  }
  let cache: CacheContext | undefined;
  /** The leases this cache's loads hold now. */
  const held = new Set<{ readonly req: FillRequest; readonly token: string }>();

  function context(): CacheContext {
    if (cache === undefined) throw new Error("Cannot use lease(): it has not joined a pipeline");
    return cache;
  }

  // Give the lease up. A failure here is harmless: the lease expires by itself.
  async function release(c: CacheContext, req: FillRequest, token: string): Promise<void> {
    try {
      await releaseLease(
        c.redis,
        { keys: req.keys, token, channel: c.channel },
        timeoutOptions(c.commandTimeoutMs, "commandTimeoutMs"),
      );
    } catch {
      // Lease expiry is the recovery path for an unreachable server.
    }
  }

  async function own(c: CacheContext, next: Fill, req: FillRequest, token: string, takenAt: number): Promise<Outcome> {
    const holding = { req, token };
    held.add(holding);
    let timer: ReturnType<typeof setInterval> | undefined;
    if (renew) {
      // A loader that never settles must not keep the key from every other
      // process: renewal ends at the ceiling, and the last one reaches it exactly.
      const holdUntil = takenAt + maxHoldMs;
      timer = setInterval(function renewHeldLease() {
        const span = Math.min(leaseMs, Math.floor(holdUntil - c.now()));
        if (span < leaseMs) clearInterval(timer);
        if (span <= 0) return;
        renewLease(
          c.redis,
          { keys: req.keys, token, leaseMs: span },
          timeoutOptions(c.commandTimeoutMs, "commandTimeoutMs"),
        ).then(
          (held) => held || clearInterval(timer),
          () => {}, // The next tick retries; expiry is the fallback.
        );
      }, Math.max(1, Math.floor(leaseMs / 3)));
      // Neither a hung loader nor its renewal may keep the process alive
      // (Node, Bun and Deno's node:timers all unref; workerd has no such notion).
      (timer as { unref?: () => void }).unref?.();
    }
    let outcome: Outcome | undefined;
    try {
      // The guard is the hook through which the publish step checks the
      // lease: stored only while our token still holds it, dropped with it.
      const guard = {
        key: req.keys.lease,
        token,
        leaseMs,
        expiresAt: takenAt + leaseMs,
        extend: (ms: number) => {
          const span = Math.max(leaseMs, ms);
          const sent = c.now();
          return renewLease(
            c.redis,
            { keys: req.keys, token, leaseMs: span },
            timeoutOptions(c.commandTimeoutMs, "commandTimeoutMs"),
          ).then(
            (held) => {
              if (held) guard.expiresAt = sent + span;
              return held;
            },
          );
        },
      };
      outcome = await next({ ...req, guard });
      return outcome;
    } finally {
      clearInterval(timer);
      // Released by a close() that ran out of time while the load ran.
      const mine = held.delete(holding);
      // Publication dropped the lease already; otherwise (a failure, a
      // not-found that is not cached) waiters must not sit out the lease.
      if (mine && outcome?.published !== true) await release(c, req, token);
    }
  }

  return {
    name: "lease",
    stage: "redis",
    leaseMs,
    waitMs,
    renew,
    maxHoldMs,
    pollMs,
    attach(c) {
      cache = c;
    },
    // Runs once the cache drained, or when a close() ran out of time: a load
    // still holding its lease then (a loader that ignores its signal) gives
    // it up, so waiters in other processes take over now rather than at its
    // expiry; its publication, if it ever comes, fails the token check.
    async close() {
      const c = cache;
      if (c === undefined || held.size === 0) return;
      const leases = [...held];
      held.clear();
      await Promise.all(leases.map(({ req, token }) => release(c, req, token)));
    },
    fill(next) {
      return async function leased(req) {
        // Redis is down and the cache serves this process alone: no lease to take.
        if (req.offline === true) return await next({ ...req });
        const c = context();
        const key = req.keys.data;
        const started = c.now();
        let ticket: Ticket | undefined;
        let pushed = false;
        if (!req.background) {
          // Watch before the first read: an announcement for a publish that
          // lands after that read is then never missed.
          pushed = await c.wakeups.ready();
          ticket = c.wakeups.watch(key);
        }
        let waiting = false;
        let acquire = true;
        try {
          for (;;) {
            ticket?.arm();
            if (acquire) {
              const token = randomUUID();
              // No signal on this read: a SET NX aborted after it was written
              // could hold a lease nobody knows about until it expires.
              let read;
              const takenAt = c.now();
              try {
                read = await c.read(req.keys, undefined, ["SET", req.keys.lease, token, "NX", "PX", leaseMs]);
              } catch (error) {
                // Redis refuses writes (OOM, READONLY) and the cache fails
                // open: no lease can be taken, so this process loads for
                // itself (coalesce() still shares it in-process), uncached.
                if (!c.degrade(key, error)) throw error;
                const { entry } = await c.read(req.keys, req.signal);
                if (c.accepts(entry, req.seen)) return { from: "cache", value: entry.value, entry, published: false };
                return await next({ ...req, degraded: true });
              }
              const { extra, entry } = read;
              if (extra === "OK") {
                c.emit({ type: "lease-won", key });
                if (req.signal.aborted || c.accepts(entry, req.seen)) {
                  await release(c, req, token);
                  if (req.signal.aborted) throw req.signal.reason;
                  // Published between our first read and the lease: never load twice.
                  return { from: "cache", value: entry!.value, entry: entry!, published: false };
                }
                return await own(c, next, req, token, takenAt);
              }
              if (c.accepts(entry, req.seen)) return { from: "cache", value: entry.value, entry, published: false };
              if (req.background) return { from: "skipped", value: undefined, published: false };
              if (pushed) {
                // A lost SET NX reads nothing: the lease key is not tracked yet,
                // and the owner's release (a failure, a skip()) would wake no one.
                // The waiter's EXISTS is a read: track it before the first wait.
                acquire = false;
                continue;
              }
            } else {
              // A waiter looks before it leaps: after a publication the lease
              // is free too, and taking it only to find the value would cost
              // a release and a spurious lease.
              const { extra, entry } = await c.read(req.keys, req.signal, ["EXISTS", req.keys.lease]);
              if (c.accepts(entry, req.seen)) return { from: "cache", value: entry.value, entry, published: false };
              if (extra === 0) {
                // The owner failed, expired or was invalidated: take over.
                acquire = true;
                continue;
              }
            }
            acquire = false;
            if (!waiting) {
              waiting = true;
              c.emit({ type: "lease-lost", key });
              c.emit({ type: "wait", key });
            }
            const waited = c.now() - started;
            if (waited >= waitMs) {
              c.emit({ type: "timeout", key, waitedMs: Math.round(waited) });
              throw new TimeoutError(
                timeoutMessage(`Waiting for another caller's load of ${key}`, "waitMs", waitMs),
                Math.round(waited),
                { setting: "waitMs", timeoutMs: waitMs },
              );
            }
            const base = pollMs ?? Math.min(pushed ? PUSH_POLL_MS : POLL_MS, leaseMs);
            const delay = base / 2 + c.random() * (base / 2);
            // A getMany batch loads its other identities meanwhile.
            req.waiting?.();
            await ticket!.wait(Math.min(waitMs - waited, delay), req.signal);
          }
        } finally {
          ticket?.close();
        }
      };
    },
  };
}
