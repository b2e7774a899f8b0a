/**
 * A missing ACL permission, told so a user can fix it: every refusal becomes
 * a `NOPERM` `RedisReplyError` whose message names the command and the rule
 * to add. Redis already answers `NOPERM` for a command sent directly, but a
 * command a Lua script calls is refused with `ERR` (7.0: "The user executing
 * the script can't run this command or subcommand script: <sha>, on
 * @user_script:<line>"; 7.2: "ACL failure in script: ...") naming only the
 * script and the line, and `ACL DRYRUN` is itself refused to a
 * least-privilege user. The script's source is known, so the line names the
 * command it calls.
 *
 * @module
 */
import { RedisReplyError } from "../errors.ts";
import type { Arg } from "../types.ts";

/** What an ACL refused. */
type Denied = "command" | "key" | "channel";

const SCRIPT_FAILURE =
  /^ERR (?:The user executing the script |ACL failure in script: )(.*?)\s*script: ([0-9a-f]{40}), on @user_script:(\d+)/;
const CALL = /redis\.p?call\(\s*['"]([A-Za-z]+)['"]/;

function deniedOf(text: string): Denied {
  if (/can't run|permissions to run/i.test(text)) return "command";
  if (/\bkeys?\b/i.test(text)) return "key";
  if (/\bchannels?\b/i.test(text)) return "channel";
  return "command";
}

/**
 * The pattern that covers `key`. Every herdless key starts with
 * `<namespace>:{` and a namespace holds no `{`, so `<namespace>:{*` covers
 * that namespace and no other (`<namespace>:*` would cover `<namespace>:x`'s
 * keys too); any other key, its first segment, then `:*`.
 */
export function patternOf(key: Arg | undefined): string {
  const text = textOf(key);
  const tag = text.indexOf(":{");
  if (tag > 0) return `${text.slice(0, tag)}:{*`;
  const colon = text.indexOf(":");
  return colon > 0 ? `${text.slice(0, colon)}:*` : "<pattern>";
}

/** The channel of the namespace of herdless' `key`, `<namespace>:published`; else as {@linkcode patternOf}. */
export function channelPatternOf(key: Arg | undefined): string {
  const text = textOf(key);
  const tag = text.indexOf(":{");
  return tag > 0 ? `${text.slice(0, tag)}:published` : patternOf(key);
}

function textOf(key: Arg | undefined): string {
  return typeof key === "string" ? key : key instanceof Uint8Array ? new TextDecoder().decode(key) : "";
}

function rule(denied: Denied, command: string, keys: readonly Arg[] | undefined): string {
  if (denied === "command") return `'+${command}'`;
  if (keys !== undefined && keys.length > 0) {
    return denied === "key" ? `'~${patternOf(keys[0])}'` : `'&${channelPatternOf(keys[0])}'`;
  }
  // Without the keys at hand, say what herdless needs.
  return denied === "key"
    ? "a key pattern that matches them ('~<namespace>:{*' for a herdless cache)"
    : "a channel pattern that matches them ('&<namespace>:published' for a herdless cache)";
}

/**
 * A `NOPERM` reply to a command sent directly, with the rule to add.
 *
 * @param error the server's `NOPERM` reply.
 * @param command the command's name as sent.
 * @param keys its keys when known.
 */
export function explainNoPerm(
  error: RedisReplyError,
  command: Arg | undefined,
  keys?: readonly Arg[],
): RedisReplyError {
  if (error.message.includes("to the user's ACL rule")) return error;
  const name = typeof command === "string" ? command.toLowerCase() : "";
  const denied = deniedOf(error.message);
  const subject = /'([a-z|]+)' command/.exec(error.message)?.[1] ?? name;
  const of = denied === "command" || name === "" ? "" : ` of '${name}'`;
  return new RedisReplyError(
    `${error.message}${of}; add ${rule(denied, subject, keys)} to the user's ACL rule`,
    { cause: error },
  );
}

/**
 * A script's ACL failure as the `NOPERM` of the command it calls, or
 * `undefined` when `error` is something else or names another script.
 *
 * @param error the reply to `EVAL`/`EVALSHA`.
 * @param script the script that ran: its SHA1 and source.
 * @param keys the script's `KEYS`.
 */
export function explainScriptFailure(
  error: RedisReplyError,
  script: { readonly sha: string; readonly lua: string },
  keys: readonly Arg[],
): RedisReplyError | undefined {
  const match = SCRIPT_FAILURE.exec(error.message);
  if (match === null || match[2] !== script.sha) return undefined;
  const line = Number(match[3]);
  const command = CALL.exec(script.lua.split("\n")[line - 1] ?? "")?.[1]?.toLowerCase() ?? "<command>";
  const denied = deniedOf(match[1]!);
  const what = denied === "command"
    ? `may not run '${command}'`
    : denied === "key"
    ? `may not access the keys '${command}' uses`
    : `may not publish to the channel '${command}' names`;
  return new RedisReplyError(
    `NOPERM the script ${script.sha} calls '${command}' at line ${line} and this user ${what}; add ${
      rule(denied, command, keys)
    } to the user's ACL rule`,
    { cause: error },
  );
}

/**
 * A `NOAUTH` reply to a command of a client given no password, saying so:
 * Redis' "Authentication required." names neither the setting nor where it
 * goes. The handshake catches this before any command where it can; a
 * lazy client's first commands leave with it and are answered this way.
 *
 * @param error the server's `NOAUTH` reply.
 * @returns the same code, the server's text and what to do.
 */
export function explainNoAuth(error: RedisReplyError): RedisReplyError {
  return new RedisReplyError(
    `${error.message} (the server requires a password and none was given: pass 'password' to connect(), ` +
      `or put it in the URL, redis://:<password>@host)`,
    { cause: error },
  );
}

/** The server's own reply behind {@linkcode explainNoAuth}'s (the handshake words its refusal itself). */
export function unexplained(error: unknown): unknown {
  return error instanceof RedisReplyError && error.code === "NOAUTH" && error.cause instanceof RedisReplyError
    ? error.cause
    : error;
}
