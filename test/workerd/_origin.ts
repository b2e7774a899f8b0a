/**
 * The origin the test Workers load from: a local HTTP server that counts
 * loads per namespace and can hold them, and that Workers tell when one of
 * their callers waits on another's lease (so a test holds the origin until
 * every caller of a burst is waiting, instead of hoping they all arrived).
 *
 * @module
 */
import { createServer, type Server } from "node:http";
import { listenLoopback } from "../support/listen.ts";

/** A running origin. */
export interface Origin {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Loads asked for `ns`. */
  loads(ns: string): number;
  /** Lease waits reported for `ns`. */
  waiting(ns: string): number;
  /** Hold every load of `ns` until the returned function is called. */
  hold(ns: string): () => void;
  /** Resolves once `ns` has `count` loads, or `count` waits (checked on each report). */
  reach(ns: string, what: "loads" | "waiting", count: number): Promise<void>;
  close(): Promise<void>;
}

/** Start an origin on a free loopback port. */
export async function startOrigin(): Promise<Origin> {
  const loads = new Map<string, number>();
  const waits = new Map<string, number>();
  const holds = new Map<string, Promise<void>>();
  const watchers = new Set<() => void>();
  const bump = (map: Map<string, number>, ns: string) => {
    map.set(ns, (map.get(ns) ?? 0) + 1);
    for (const watch of [...watchers]) watch();
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://origin");
    const ns = url.searchParams.get("ns") ?? "";
    if (url.pathname === "/waiting") {
      bump(waits, ns);
      res.end("ok");
      return;
    }
    bump(loads, ns);
    const n = loads.get(ns)!;
    void (holds.get(ns) ?? Promise.resolve()).then(() => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ key: url.searchParams.get("key"), load: n }));
    });
  });
  const port = await listenLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    loads: (ns) => loads.get(ns) ?? 0,
    waiting: (ns) => waits.get(ns) ?? 0,
    hold(ns) {
      let release!: () => void;
      holds.set(ns, new Promise<void>((resolve) => (release = resolve)));
      return release;
    },
    reach(ns, what, count) {
      const map = what === "loads" ? loads : waits;
      return new Promise<void>((resolve) => {
        const watch = () => {
          if ((map.get(ns) ?? 0) < count) return;
          watchers.delete(watch);
          resolve();
        };
        watchers.add(watch);
        watch();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
