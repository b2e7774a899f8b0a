/**
 * The servers' own words, for the few tests that check text a server wrote
 * rather than what herdless did with it. CI runs the suite on Redis 7.0,
 * Redis 8.0 and Valkey 8.1: each pattern accepts what each of them says,
 * every alternative marked with who says it, and nothing else. herdless' own
 * messages are asserted exactly, never through these.
 */
import { spawnSync } from "node:child_process";
import { redisServerBinary } from "./redis_server.ts";

/** The server the harness starts: its name and version, as `--version` prints them. */
export interface TestedServer {
  readonly name: "redis" | "valkey";
  /** `8.0.2` */
  readonly version: string;
  readonly major: number;
}

let tested: TestedServer | undefined;

/** Which server the tests run against (`REDIS_SERVER`, else redis-server on PATH). */
export function testedServer(): TestedServer {
  if (tested !== undefined) return tested;
  const out = spawnSync(redisServerBinary(), ["--version"], { encoding: "utf8" }).stdout;
  // "Redis server v=7.0.15 sha=..." or "Valkey server v=8.1.1 sha=..."
  const match = /^(Redis|Valkey) server v=(\d+)\.(\d+)\.(\d+)/.exec(out);
  if (match === null) throw new Error(`Cannot tell which server '${redisServerBinary()}' is: --version said ${out}`);
  tested = {
    name: match[1] === "Valkey" ? "valkey" : "redis",
    version: `${match[2]}.${match[3]}.${match[4]}`,
    major: Number(match[2]),
  };
  return tested;
}

/** One pattern matching any of `texts` (regular expression sources), keyed by the servers that say each. */
function saidBy(texts: Record<string, string>): RegExp {
  return new RegExp(`(?:${Object.values(texts).join("|")})`);
}

/** What `EVAL` answers for a script calling a command that does not exist (the start of the error). */
export const UNKNOWN_COMMAND_IN_SCRIPT: RegExp = saidBy({
  "Redis 7.0, Redis 8.0": "ERR Unknown Redis command called from script ",
  "Valkey 8.1": "ERR Unknown command called from script ",
});

/** What `EVAL` answers for a script calling a command its user may not run (the start of the error). */
export const SCRIPT_COMMAND_REFUSED: RegExp = saidBy({
  "Redis 7.0": "ERR The user executing the script can't run this command",
  "Redis 8.0, Valkey 8.1": "ERR ACL failure in script: User \\S+ has no permissions to run the '[a-z|]+' command",
});

/** The text of the `NOPERM` for a command whose keys its user may not access (after `NOPERM `). */
export const KEY_REFUSED: RegExp = saidBy({
  "Redis 7.0": "this user has no permissions to access one of the keys used as arguments",
  "Redis 8.0, Valkey 8.1": "No permissions to access a key",
});
