/**
 * Parsing of `redis://`, `rediss://` and `unix://` connection URLs, and the
 * one way a URL is shown in a message: with its password hidden, whatever
 * the password's characters and however the URL is mistyped.
 *
 * @module
 */
import { show } from "./shared/mod.ts";

/**
 * Where and as whom to connect, as a URL can say it: what `parseRedisUrl`
 * returns, and the fields `connect()`'s options share with it (a field the
 * URL leaves out is absent here, and `connect()` applies its default).
 */
export interface RedisUrl {
  /** Host name or address, IPv6 without its brackets. @default {"127.0.0.1"} */
  host?: string;
  /** TCP port. @default {6379} */
  port?: number;
  /** Unix socket path (instead of host and port). */
  path?: string;
  /** ACL user name (with `password`); percent-decoded in a URL. */
  username?: string;
  /**
   * Password sent with AUTH on every (re)connect; with `username` for an ACL
   * user. In a URL it is percent-decoded (a `%` not followed by two hex
   * digits is kept as written), and `#`, `/`, `?` and `@` may be written as
   * they are: the password runs to the last `@`. Never shown in a message.
   */
  password?: string;
  /** Database selected on every (re)connect (the path of a `redis://` URL, `?db=` of a unix one). @default {0} */
  db?: number;
  /** TLS: true for `rediss://`. @default {false} */
  tls?: boolean;
}

/**
 * Parse a connection URL: `redis://[user[:password]@]host[:port][/db]`,
 * `rediss://...` (TLS), or `unix:///path/to.sock[?db=N&password=...&username=...]`
 * (`redis+unix://` too). User and password are percent-decoded; a password
 * may hold `#`, `/`, `?` and `@` as they are (it runs to the last `@`).
 *
 * @param url the connection URL.
 * @returns what it says, field by field.
 * @throws {TypeError} when the URL is malformed or its scheme is not one of those; the message shows the URL with
 *   its password replaced by `***`.
 * @example Read a URL with a user, a password and a database
 * ```ts
 * import { parseRedisUrl } from "@herdless/herdless";
 * console.log(parseRedisUrl("redis://default:s3cret@127.0.0.1:6380/2"));
 * // { tls: false, username: "default", password: "s3cret", host: "127.0.0.1", port: 6380, db: 2 }
 * ```
 */
export function parseRedisUrl(url: string): RedisUrl {
  if (typeof url !== "string") throw new TypeError(`Cannot connect: 'url' must be a string, got ${show(url)}`);
  const shown = show(redactUrl(url));
  const scheme0 = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme0 === undefined) {
    throw new TypeError(
      `Cannot connect: 'url' must start with redis://, rediss:// or unix:// (e.g. redis://127.0.0.1:6379), got ${shown}`,
    );
  }
  const slashes = url.slice(scheme0.length + 1).startsWith("//");
  if (!KNOWN.has(scheme0)) {
    // "localhost:6379" parses as the scheme "localhost": suggest what was meant.
    const hint = slashes ? "" : `; did you mean ${show(`redis://${redactUrl(url)}`)}?`;
    throw new TypeError(
      `Cannot connect: 'url' must start with redis://, rediss:// or unix://, got ${shown} (scheme "${scheme0}"${hint})`,
    );
  }
  if (!slashes) {
    throw new TypeError(`Cannot connect: 'url' needs "//" after "${scheme0}:" (${scheme0}://...), got ${shown}`);
  }
  if (scheme0 === "unix" || scheme0 === "redis+unix") return parseUnixUrl(url, shown);
  const out: RedisUrl = { tls: scheme0 === "rediss" };
  // The credentials are split off here, up to the last "@", and never reach
  // URL: it would end them at a "#", "/" or "?" and read the rest as a
  // port, and its own error keeps the whole input.
  let rest = url.slice(scheme0.length + 3);
  const at = rest.lastIndexOf("@");
  if (at !== -1) {
    const credentials = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = credentials.indexOf(":");
    const username = colon === -1 ? credentials : credentials.slice(0, colon);
    if (username) out.username = percentDecoded(username);
    if (colon !== -1 && colon + 1 < credentials.length) out.password = percentDecoded(credentials.slice(colon + 1));
  }
  checkPort(rest, shown);
  let parsed: URL;
  try {
    parsed = new URL(`${scheme0}://${rest}`);
  } catch {
    // No cause: the credentials are not in what URL saw, but nothing of it adds to this message.
    throw new TypeError(`Cannot connect: 'url' is not a valid URL, got ${shown}`);
  }
  // URL keeps IPv6 literals bracketed; net.connect wants them bare.
  if (parsed.hostname) out.host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  if (parsed.port) out.port = Number(parsed.port);
  const db = parsed.pathname.replace(/^\//, "");
  if (db) out.db = parseDb(percentDecoded(db), shown);
  return out;
}

const KNOWN = new Set(["redis", "rediss", "unix", "redis+unix"]);

function parseUnixUrl(url: string, shown: string): RedisUrl {
  // The query is read as written, a "#" in it included: URL would end it
  // there and cut a password short.
  const q = url.indexOf("?");
  let parsed: URL;
  try {
    parsed = new URL(q === -1 ? url : url.slice(0, q));
  } catch {
    throw new TypeError(`Cannot connect: 'url' is not a valid URL, got ${shown}`);
  }
  const out: RedisUrl = { path: percentDecoded(parsed.pathname) };
  const query = new URLSearchParams(q === -1 ? "" : url.slice(q + 1));
  const db = query.get("db");
  if (db !== null) out.db = parseDb(db, shown);
  const password = query.get("password");
  if (password !== null) out.password = password;
  const username = query.get("username");
  if (username !== null) out.username = username;
  return out;
}

/** Percent-decoded, or as written when it is not valid percent-encoding (a lone `%` in a password). */
function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function parseDb(text: string, shown: string): number {
  if (!/^\d+$/.test(text)) {
    throw new TypeError(
      `Cannot connect: the database in 'url' must be a non-negative integer, got ${show(text)} in ${shown}`,
    );
  }
  return Number(text);
}

// The port as written, checked before URL parsing: new URL() refuses a port
// over 65535 or with letters as a whole ("not a valid URL"), naming nothing.
// `hostAndRest` is what follows the credentials: no password is in it.
function checkPort(hostAndRest: string, shown: string): void {
  const hostPort = /^[^/?#]*/.exec(hostAndRest)![0];
  const port = /^(?:\[[^\]]*\]|[^:]*)(?::(.*))?$/.exec(hostPort)?.[1];
  if (port === undefined || port === "") return;
  // Port 0 parses, and 'port' then names it like an explicit one.
  if (!/^\d+$/.test(port) || Number(port) > 65535) {
    throw new TypeError(
      `Cannot connect: the port in 'url' must be an integer in 1..65535, got ${show(port)} in ${shown}`,
    );
  }
}

/**
 * `url` as a message may show it: every password replaced by `***`. The
 * credentials are whatever precedes the last `@` (after the scheme and its
 * slashes, when there are some): in a URL that starts `scheme://` the user
 * name before their first `:` is kept and the rest hidden; otherwise (no
 * `:`, a scheme without its `//`, no scheme) all of it is hidden, since a
 * mistyped URL says nothing sure about where the password starts. A `password=` query parameter is
 * hidden up to the next `&`, whatever it holds. Hiding too much is the safe
 * way to be wrong.
 *
 * @param url anything given as a URL, however malformed.
 * @returns it with no password left in it.
 */
export function redactUrl(url: string): string {
  const out = url.replace(/([?&]password=)[^&]*/gi, "$1***");
  const at = out.lastIndexOf("@");
  if (at === -1) return out;
  const whole = /^[a-z][a-z0-9+.-]*:\/\//i.exec(out)?.[0];
  const prefix = whole ?? /^(?:redis|rediss|unix|redis\+unix):\/?/i.exec(out)?.[0] ?? "";
  const credentials = out.slice(prefix.length, at);
  const colon = credentials.indexOf(":");
  // The user name only where the URL is whole enough to say where it ends.
  const kept = colon === -1 || whole === undefined ? "" : `${credentials.slice(0, colon)}:`;
  return `${prefix}${kept}***${out.slice(at)}`;
}
