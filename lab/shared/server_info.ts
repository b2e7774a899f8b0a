/**
 * What the lab reads of a server's own accounts: a field of `INFO`, and the
 * clients `CLIENT LIST` shows. The chaos run counts its workers' connections
 * with them, the soak its connections on every server, the stampede lab the
 * connections 1,000 isolates open.
 *
 * @module
 */
import type { RedisLike } from "../../mod.ts";

/** One client of CLIENT LIST, the fields the lab uses. */
export interface ClientInfo {
  id: string;
  name: string;
  flags: string;
}

/** Every client the server lists. */
export async function clientList(admin: RedisLike): Promise<ClientInfo[]> {
  const text = String(await admin.send(["CLIENT", "LIST"]));
  return text.split("\n").filter((line) => line.trim().length > 0).map((line) => {
    const field = (name: string) => new RegExp(`(?:^| )${name}=(\\S*)`).exec(line)?.[1] ?? "";
    return { id: field("id"), name: field("name"), flags: field("flags") };
  });
}

/** A field of INFO, as a number (NaN if absent). */
export async function info(admin: RedisLike, section: string, field: string): Promise<number> {
  const text = String(await admin.send(["INFO", section]));
  return Number(new RegExp(`^${field}:(\\S+)`, "m").exec(text)?.[1]);
}
