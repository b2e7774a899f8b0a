/**
 * The chaos run's settings in one place: load, cache, fault and verdict
 * timings. `run.ts` may override the load from the command line; everything
 * else is fixed so that two runs are comparable, apart from a named
 * profile (`--profile <name>`, see {@linkcode profiles}), which the workers
 * learn from the environment (`HERDLESS_CHAOS_PROFILE`, set by `run.ts`).
 *
 * @module
 */
import process from "node:process";

/** What every worker process needs to know, passed to it as JSON in argv. */
export interface WorkerConfig {
  /** Worker number (0-based), also its connection name `chaos-w<id>`. */
  id: number;
  /** The cache server, through the fault proxy (unused when `sentinel` is set). */
  cacheUrl: string;
  /**
   * Reach the cache through these sentinels with `connectSentinel` instead
   * (the sentinel worker: its own Sentinel-managed servers, never behind the proxy).
   */
  sentinel?: { urls: readonly string[]; name: string };
  /** The separate server that counts origin calls (never faulted). */
  counterUrl: string;
  /** `Date.now()` at which window 0 starts; shared by all processes on this machine. */
  t0: number;
  /** Gets started per second. */
  rate: number;
  /** `"auto"` (push wake-ups on the data connection) or `"poll"`. */
  wakeups: "auto" | "poll";
  /** False to leave `limit()` out of the pipeline (to compare how the origin fares without it). */
  limit: boolean;
}

const base = {
  workers: 4,
  /** Gets per second per worker. */
  rate: 400,
  keys: 200,
  /** Zipf exponent: key i is requested with weight 1 / (i + 1)^s. */
  zipfS: 1,
  /** Keys of the sentinel worker are `s<n>` (the proxy workers' `k<n>`): its cache is another Redis, its origin calls are its own. */
  sentinelKeyPrefix: "s",
  /** Gets per second of the sentinel worker: half a worker's, enough to refresh keys across the switch on 2 cores. */
  sentinelRate: 200,
  /** Requests per second the parent's driver sends the workerd client (a Worker under workerd). */
  workerdRate: 20,
  /** Filler in each ordinary value, so that maxmemory has something to evict. */
  valueBytes: 2048,
  /** The 1 MB value, read `bigBurst` times at once by every worker in its fault. */
  bigKey: "big",
  bigBytes: 1024 * 1024,
  bigBurst: 64,
  /** The 64 MB value, loaded by worker 0 through a cache whose lease is `hugeLeaseMs`. */
  hugeKey: "huge",
  hugeBytes: 64 * 1024 * 1024,
  hugeLeaseMs: 500,
  /** Simulated origin latency after it counted the call. */
  originMs: 10,

  ttlMs: 2000,
  staleMs: 2000,
  spreadMs: 500,
  leaseMs: 1500,
  waitMs: 1000,
  limit: { concurrency: 2, queueMs: 100 },
  getTimeoutMs: 2000,

  /** Width of one measurement window. */
  windowMs: 250,
  warmupMs: 3000,
  baselineMs: 5000,
  /** How long each fault lasts, then how long the run waits for recovery before the next. */
  faultMs: 3000,
  recoverMs: 6000,
  /** Quicker phases for `--quick` (the recovery bound shorter too: a stricter run, not a looser one). */
  quick: { warmupMs: 2000, baselineMs: 3000, faultMs: 2000, recoverMs: 4000 },
  /** How long each worker's connection is timed draining raw 1 MB GETs, before the faults are sized. */
  drainProbeMs: 1000,
  /** Quiet time after the drain probe, so the baseline does not begin behind its last replies. */
  drainRestMs: 1000,
  /** Share of the measured drain the load faults may ask (`--drain-fraction`). */
  drainFraction: 0.5,
  /** A get still unsettled after this long is a hang (gets carry a 2 s timeout). */
  hangMs: 10_000,
  /** An origin call for a key sooner than this after the previous one came while a fresh value should exist (shortest jittered TTL, less slack for xfetch's early refresh). */
  minGapMs: 2000 - 500 - 250,
  /** A window has recovered when its error rate is at most max(2 x baseline, this). */
  recoveredErrorRate: 0.01,
  /** Faults whose name contains one of these words (all when unset); `--only` overrides it. */
  only: undefined as readonly string[] | undefined,
};

/** The run's settings: the defaults, or a profile's changes to them. */
export type ChaosSettings = Readonly<typeof base>;

/**
 * Named variants of the run. `eviction-storm` replays the run in which
 * values once went backwards after an eviction storm (4 processes x 500
 * gets/s over 200 Zipf keys, `swr({ staleMs: 1000 })`, `lease({ leaseMs: 500 })`,
 * `jitter({ spreadMs: 200 })`, `ttlMs: 1000`), with `maxmemory 1mb` under
 * `allkeys-lru` for 10 s as its only fault: 1 MB is below Redis' own
 * baseline, so keys are evicted and writes refused (OOM) at once.
 */
export const profiles: Readonly<Record<string, Partial<ChaosSettings>>> = {
  "eviction-storm": {
    rate: 500,
    ttlMs: 1000,
    staleMs: 1000,
    leaseMs: 500,
    spreadMs: 200,
    faultMs: 10_000,
    minGapMs: 1000 - 200 - 250,
    only: ["maxmemory 1mb"],
  },
};

/** The profile named by `--profile <name>` (or `--profile=<name>`) in `argv`, else by `HERDLESS_CHAOS_PROFILE`. */
export function profileName(argv: readonly string[], env: Record<string, string | undefined>): string | undefined {
  const at = argv.findIndex((a) => a === "--profile" || a.startsWith("--profile="));
  const name = at === -1
    ? env.HERDLESS_CHAOS_PROFILE
    : argv[at]!.includes("=")
    ? argv[at]!.split("=")[1]
    : argv[at + 1];
  if (name === undefined || name === "") return undefined;
  if (!(name in profiles)) {
    throw new RangeError(
      `Cannot run chaos: unknown profile ${JSON.stringify(name)} (known: ${Object.keys(profiles).join(", ")})`,
    );
  }
  return name;
}

/** The settings of `profile` (the defaults when it is undefined). */
export function settingsOf(profile: string | undefined): ChaosSettings {
  return { ...base, ...(profile === undefined ? {} : profiles[profile]) };
}

/** This process' profile. */
export const profile: string | undefined = profileName(process.argv, process.env);
export const settings: ChaosSettings = settingsOf(profile);
