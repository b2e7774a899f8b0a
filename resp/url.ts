/**
 * Parsing of `redis://`, `rediss://` and `unix://` connection URLs.
 *
 * @module
 */
import { show } from "./shared/mod.ts";

/** What a connection URL says; a field the URL leaves out is absent. */
export interface RedisUrl {
  /** Host name or address, IPv6 without its brackets. */
  host?: string;
  /** TCP port. */
  port?: number;
  /** Unix socket path. */
  path?: string;
  /** ACL user name, percent-decoded. */
  username?: string;
  /** Password, percent-decoded. */
  password?: string;
  /** Database number (the path of a `redis://` URL, `?db=` of a unix one). */
  db?: number;
  /** True for `rediss://`. */
  tls?: boolean;
}

/**
 * Parse a connection URL: `redis://[user[:password]@]host[:port][/db]`,
 * `rediss://...` (TLS), or `unix:///path/to.sock[?db=N&password=...&username=...]`
 * (`redis+unix://` too). User and password are percent-decoded.
 *
 * @param url the connection URL.
 * @returns what it says, field by field.
 * @throws {TypeError} when the URL is malformed or its scheme is not one of those.
 * @example Read a URL with a user, a password and a database
 * ```ts
 * import { parseRedisUrl } from "@herdless/herdless";
 * console.log(parseRedisUrl("redis://default:s3cret@127.0.0.1:6380/2"));
 * // { host: "127.0.0.1", port: 6380, username: "default", password: "s3cret", db: 2, tls: false }
 * ```
 */
export function parseRedisUrl(url: string): RedisUrl {
  if (typeof url !== "string") throw new TypeError(`Cannot connect: 'url' must be a string, got ${show(url)}`);
  const shown = show(redact(url));
  const scheme0 = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme0 === undefined) {
    throw new TypeError(
      `Cannot connect: 'url' must start with redis://, rediss:// or unix:// (e.g. redis://127.0.0.1:6379), got ${shown}`,
    );
  }
  const slashes = url.slice(scheme0.length + 1).startsWith("//");
  if (!KNOWN.has(scheme0)) {
    // "localhost:6379" parses as the scheme "localhost": suggest what was meant.
    const hint = slashes ? "" : `; did you mean ${show(redact(`redis://${url}`))}?`;
    throw new TypeError(
      `Cannot connect: 'url' must start with redis://, rediss:// or unix://, got ${shown} (scheme "${scheme0}"${hint})`,
    );
  }
  if (!slashes) {
    throw new TypeError(`Cannot connect: 'url' needs "//" after "${scheme0}:" (${scheme0}://...), got ${shown}`);
  }
  if (scheme0 === "redis" || scheme0 === "rediss") checkPort(url, shown);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw new TypeError(`Cannot connect: 'url' is not a valid URL, got ${shown}`, { cause });
  }
  const out: RedisUrl = {};
  const scheme = parsed.protocol;
  if (scheme === "unix:" || scheme === "redis+unix:") {
    out.path = decodeURIComponent(parsed.pathname);
    const db = parsed.searchParams.get("db");
    if (db !== null) out.db = parseDb(db, shown);
    const password = parsed.searchParams.get("password");
    if (password !== null) out.password = password;
    const username = parsed.searchParams.get("username");
    if (username !== null) out.username = username;
    return out;
  }
  if (scheme !== "redis:" && scheme !== "rediss:") {
    throw new TypeError(
      `Cannot connect: 'url' must start with redis://, rediss:// or unix://, got ${shown} (scheme "${
        scheme.slice(0, -1)
      }")`,
    );
  }
  out.tls = scheme === "rediss:";
  // URL keeps IPv6 literals bracketed; net.connect wants them bare.
  if (parsed.hostname) out.host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  if (parsed.port) out.port = Number(parsed.port);
  if (parsed.username) out.username = decodeURIComponent(parsed.username);
  if (parsed.password) out.password = decodeURIComponent(parsed.password);
  const db = parsed.pathname.replace(/^\//, "");
  if (db) out.db = parseDb(decodeURIComponent(db), shown);
  return out;
}

const KNOWN = new Set(["redis", "rediss", "unix", "redis+unix"]);

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
function checkPort(url: string, shown: string): void {
  const authority = /^[^:]+:\/\/([^/?#]*)/.exec(url)?.[1] ?? "";
  const hostPort = authority.slice(authority.lastIndexOf("@") + 1);
  const port = /^(?:\[[^\]]*\]|[^:]*)(?::(.*))?$/.exec(hostPort)?.[1];
  if (port === undefined || port === "") return;
  // Port 0 parses, and 'port' then names it like an explicit one.
  if (!/^\d+$/.test(port) || Number(port) > 65535) {
    throw new TypeError(
      `Cannot connect: the port in 'url' must be an integer in 1..65535, got ${show(port)} in ${shown}`,
    );
  }
}

/** `url` with its password replaced by `***`, for messages. */
function redact(url: string): string {
  return url
    .replace(/^([^:]+:\/\/[^/?#@:]*:)[^/?#@]*@/, "$1***@")
    .replace(/([?&]password=)[^&#]*/i, "$1***");
}
