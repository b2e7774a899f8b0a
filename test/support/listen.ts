/**
 * Every server the tests start in this process (a fake Redis, a proxy, an
 * origin) listens on a free loopback port the system picks, so parallel
 * files never collide and nothing is reachable from outside.
 */
import type { Server as HttpServer } from "node:http";
import type { Server as NetServer } from "node:net";

/** Listen on port 0 of 127.0.0.1; resolves the port the system gave, rejects if listening failed. */
export function listenLoopback(server: NetServer | HttpServer): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      const address = server.address();
      resolve(typeof address === "object" && address !== null ? address.port : 0);
    });
  });
}
