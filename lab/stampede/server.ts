/**
 * The Redis the lab runs against: a disposable redis-server on a free
 * loopback port (the test harness's), or the server `REDIS_URL` names.
 *
 * On a server the lab did not start it never runs FLUSHALL: the "flush"
 * deletes only the lab's own keys (prefix `lab-`), which is the same cold
 * start for the lab's caches without destroying somebody's data.
 *
 * @module
 */
import process from "node:process";
import { connect } from "../../resp/mod.ts";
import { startRedis } from "../shared/servers.ts";

/** The server and what the lab may do to it. */
export interface LabServer {
  url: string;
  /** True when the lab started it (and may FLUSHALL it). */
  owned: boolean;
  /** `redis_version` from INFO. */
  version: string;
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/** Start a disposable server, or use `REDIS_URL`. */
export async function labServer(): Promise<LabServer> {
  const external = process.env.REDIS_URL;
  const server = external === undefined || external === "" ? await startRedis() : undefined;
  const url = server?.url ?? external!;
  const admin = await connect({ url });
  const info = String(await admin.send(["INFO", "server"]));
  const version = /redis_version:(\S+)/.exec(info)?.[1] ?? "unknown";
  async function deleteLabKeys(): Promise<void> {
    let cursor = "0";
    // Bounded: SCAN visits each key a bounded number of times and ends at cursor 0.
    do {
      const [next, keys] = (await admin.send(["SCAN", cursor, "MATCH", "lab-*", "COUNT", 1000])) as [string, string[]];
      cursor = next;
      if (keys.length > 0) await admin.send(["UNLINK", ...keys]);
    } while (cursor !== "0");
  }
  return {
    url,
    owned: server !== undefined,
    version,
    async flush() {
      if (server !== undefined) {
        await admin.send(["FLUSHALL"]);
        return;
      }
      await deleteLabKeys();
    },
    async stop() {
      // Somebody else's server is left as it was found, less the lab's keys.
      if (server === undefined) await deleteLabKeys();
      await admin.close();
      await server?.stop();
    },
  };
}
