/**
 * Would a Bun.connect transport help our client under Bun? The same minimal
 * client (our `CommandWriter` and `Decoder`, a FIFO of resolvers, one write
 * per tick) over node:net and over `Bun.connect`, next to our full client
 * and Bun's built-in `RedisClient`, in rounds A B C D repeated, with the CPU
 * time each spends per operation. Run it pinned, against a pinned server:
 *
 *   taskset -c 0 redis-server --port 6399 --save "" --appendonly no &
 *   taskset -c 1 bun bench/experiments/bun_transport.ts redis://127.0.0.1:6399
 *
 * Only the transport differs between "mini/net" and "mini/bun"; the gap
 * between "mini/net" and "ours" is what the full client adds on top.
 *
 * An experiment on the client's insides: besides the entry `resp/mod.ts`, it
 * imports the command encoder (`resp/connection/encode.ts`) to build the
 * minimal client, which no entry exports.
 *
 * @module
 */
import { connect as netConnect, type Socket } from "node:net";
import process from "node:process";
import { type Arg, connect, Decoder, type Reply } from "../../resp/mod.ts";
import { CommandWriter } from "../../resp/connection/encode.ts";

interface Mini {
  send(args: readonly Arg[]): Promise<Reply>;
  close(): void;
}

type Transport = "net" | "bun";

/** The part of Bun's built-in `RedisClient` this experiment uses (typed here: the bench does not need bun-types). */
interface BunRedis {
  connect(): Promise<void>;
  get(key: string): Promise<unknown>;
  set(key: string, value: string): Promise<unknown>;
  close(): void;
}

async function mini(url: string, transport: Transport): Promise<Mini> {
  const { hostname, port } = new URL(url);
  const writer = new CommandWriter();
  const resolvers: ((v: Reply) => void)[] = [];
  let head = 0;
  let scheduled = false;
  const decoder = new Decoder({
    reply(value) {
      const r = resolvers[head]!;
      resolvers[head++] = undefined as never;
      if (head > 4096 && head * 2 > resolvers.length) {
        resolvers.splice(0, head);
        head = 0;
      }
      r(value);
    },
    push() {},
  });
  let write: (bytes: Uint8Array) => void;
  let close: () => void;
  if (transport === "net") {
    const socket: Socket = await new Promise((resolve, reject) => {
      const s = netConnect(
        { host: hostname, port: Number(port) },
        () => resolve(s),
      );
      s.once("error", reject);
    });
    socket.setNoDelay(true);
    socket.on("data", (chunk: Uint8Array) => decoder.feed(chunk));
    write = (bytes) => void socket.write(bytes);
    close = () => socket.destroy();
  } else {
    // Bun.connect: write() returns the bytes the kernel took; keep the rest until drain.
    let pending: Uint8Array | undefined;
    const bun = (globalThis as unknown as {
      Bun: { connect(o: unknown): Promise<BunSocket> };
    }).Bun;
    interface BunSocket {
      write(b: Uint8Array): number;
      end(): void;
      setNoDelay?(on: boolean): void;
    }
    const socket = await bun.connect({
      hostname,
      port: Number(port),
      socket: {
        data(_s: unknown, chunk: Uint8Array) {
          decoder.feed(chunk);
        },
        drain(s: BunSocket) {
          if (pending === undefined) return;
          const n = s.write(pending);
          pending = n < pending.length ? pending.subarray(n) : undefined;
        },
        error(_s: unknown, e: Error) {
          console.error(e);
        },
      },
    });
    socket.setNoDelay?.(true);
    write = (bytes) => {
      if (pending !== undefined) {
        const joined = new Uint8Array(pending.length + bytes.length);
        joined.set(pending);
        joined.set(bytes, pending.length);
        pending = joined;
        return;
      }
      const n = socket.write(bytes);
      if (n < bytes.length) pending = bytes.subarray(n);
    };
    close = () => socket.end();
  }
  const flush = () => {
    scheduled = false;
    write(writer.take());
  };
  return {
    send(args) {
      writer.push(args);
      const p = new Promise<Reply>((resolve) => resolvers.push(resolve));
      if (!scheduled) {
        scheduled = true;
        queueMicrotask(flush);
      }
      return p;
    },
    close,
  };
}

type Get = (key: string) => Promise<unknown>;
type Set = (key: string, value: string) => Promise<unknown>;

async function open(
  name: string,
  url: string,
): Promise<{ get: Get; set: Set; close: () => void }> {
  if (name === "mini/net" || name === "mini/bun") {
    const m = await mini(url, name === "mini/net" ? "net" : "bun");
    return {
      get: (k) => m.send(["GET", k]),
      set: (k, v) => m.send(["SET", k, v]),
      close: () => m.close(),
    };
  }
  if (name === "ours") {
    const c = await connect(url);
    return {
      get: (k) => c.send(["GET", k]),
      set: (k, v) => c.send(["SET", k, v]),
      close: () => void c.close(),
    };
  }
  const { RedisClient } = (await import("bun" as string)) as {
    RedisClient: new (u: string) => BunRedis;
  };
  const c = new RedisClient(url);
  await c.connect();
  return {
    get: (k) => c.get(k),
    set: (k, v) => c.set(k, v),
    close: () => c.close(),
  };
}

const KEYS = Array.from({ length: 1000 }, (_, i) => `bench:get:${i}`);
const VALUE = "v".repeat(64);

async function lanes(
  n: number,
  ms: number,
  op: (i: number) => Promise<unknown>,
): Promise<number> {
  const end = performance.now() + ms;
  let done = 0;
  let next = 0;
  const lane = async () => {
    while (performance.now() < end) {
      await op(next++);
      done++;
    }
  };
  await Promise.all(Array.from({ length: n }, lane));
  return done;
}

async function batches(ms: number, set: Set): Promise<number> {
  const end = performance.now() + ms;
  let done = 0;
  while (performance.now() < end) {
    const all: Promise<unknown>[] = [];
    for (let i = 0; i < 1000; i++) all.push(set(`bench:set:${i}`, VALUE));
    await Promise.all(all);
    done += 1000;
  }
  return done;
}

const url = process.argv[2] ?? process.env.REDIS_URL ??
  "redis://127.0.0.1:6399";
const ms = Number(process.env.MS ?? 1000);
const reps = Number(process.env.REPS ?? 3);
const names = (process.env.CLIENTS ?? "mini/net,mini/bun,ours,bun").split(",");
const scenarios: [
  string,
  (c: Awaited<ReturnType<typeof open>>, ms: number) => Promise<number>,
][] = [
  ["get-seq", (c, t) => lanes(1, t, (i) => c.get(KEYS[i % 1000]!))],
  ["get-100", (c, t) => lanes(100, t, (i) => c.get(KEYS[i % 1000]!))],
  ["set-batch", (c, t) => batches(t, c.set)],
];
const only = process.env.SCENARIOS?.split(",");
if (only !== undefined) {
  scenarios.splice(
    0,
    scenarios.length,
    ...scenarios.filter(([name]) => only.includes(name)),
  );
}
const seed = await connect(url);
await Promise.all(KEYS.map((k) => seed.send(["SET", k, VALUE])));
await seed.close();
const clients = await Promise.all(names.map((n) => open(n, url)));
for (const [scenario, run] of scenarios) {
  const results = new Map<
    string,
    { ops: number[]; user: number[]; system: number[] }
  >();
  for (let rep = 0; rep < reps; rep++) {
    for (let i = 0; i < names.length; i++) {
      await run(clients[i]!, 200);
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const ops = await run(clients[i]!, ms);
      const t = performance.now() - t0;
      const c = process.cpuUsage(c0);
      const r = results.get(names[i]!) ?? { ops: [], user: [], system: [] };
      r.ops.push((ops * 1000) / t);
      r.user.push(c.user / ops);
      r.system.push(c.system / ops);
      results.set(names[i]!, r);
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  for (const [name, r] of results) {
    const f = (x: number) => x.toFixed(2).padStart(6);
    console.log(
      `${scenario.padEnd(10)} ${name.padEnd(9)} ${
        Math.round(med(r.ops)).toLocaleString("en-US").padStart(10)
      } ops/s  CPU µs/op: user ${f(med(r.user))} system ${f(med(r.system))}`,
    );
  }
}
for (const c of clients) c.close();
process.exit(0);
