/**
 * Parsing of `redis://`, `rediss://` and `unix://` connection URLs.
 *
 * @module
 */
import { show } from "./_validate.ts";

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
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw new TypeError(`Cannot connect: 'url' is not a valid URL, got ${show(url)}`, { cause });
  }
  const out: RedisUrl = {};
  const scheme = parsed.protocol;
  if (scheme === "unix:" || scheme === "redis+unix:") {
    out.path = decodeURIComponent(parsed.pathname);
    const db = parsed.searchParams.get("db");
    if (db !== null) out.db = parseDb(db, url);
    const password = parsed.searchParams.get("password");
    if (password !== null) out.password = password;
    const username = parsed.searchParams.get("username");
    if (username !== null) out.username = username;
    return out;
  }
  if (scheme !== "redis:" && scheme !== "rediss:") {
    throw new TypeError(
      `Cannot connect: 'url' must start with redis://, rediss:// or unix://, got ${show(url)}`,
    );
  }
  out.tls = scheme === "rediss:";
  // URL keeps IPv6 literals bracketed; net.connect wants them bare.
  if (parsed.hostname) out.host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  if (parsed.port) out.port = Number(parsed.port);
  if (parsed.username) out.username = decodeURIComponent(parsed.username);
  if (parsed.password) out.password = decodeURIComponent(parsed.password);
  const db = parsed.pathname.replace(/^\//, "");
  if (db) out.db = parseDb(db, url);
  return out;
}

function parseDb(text: string, url: string): number {
  if (!/^\d+$/.test(text)) {
    throw new TypeError(
      `Cannot connect: the database in 'url' must be a non-negative integer, got ${show(url)}`,
    );
  }
  return Number(text);
}
