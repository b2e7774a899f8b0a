/**
 * What the client knows of the sentinels: their list (as given, then grown
 * from `SENTINEL sentinels`), which one answered last (asked first next
 * time, as the Sentinel client guidelines ask), and one connection kept to
 * one of them, subscribed to `+switch-master` and used for the questions.
 * Any one signal of a failover can be missed (a message lost with its
 * connection, a sentinel that was partitioned away), so the master is also
 * asked for again every `checkIntervalMs`.
 *
 * @module
 */
import { RedisClient } from "../client.ts";
import { ConnectionError } from "../errors.ts";
import { resolveConnectOptions } from "../options.ts";
import type { Reply } from "../types.ts";
import type { ResolvedSentinelOptions, SentinelAddress, SentinelEvent } from "./options.ts";

/** A server the sentinels named. */
export interface MasterAddress {
  readonly host: string;
  readonly port: number;
}

/** What the sentinels tell their owner. */
export interface SentinelHooks {
  /** The sentinels name a master: move there if that is not where the client is. */
  master(address: MasterAddress, why: string): void;
  /** Report an event (a periodic check that reached no sentinel). */
  emit(event: SentinelEvent): void;
}

const SWITCH = "+switch-master";

/** The sentinels of one master group. */
export class Sentinels {
  readonly #o: ResolvedSentinelOptions;
  readonly #hooks: SentinelHooks;
  #list: SentinelAddress[];
  #watch: RedisClient | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #checking = false;
  #closed = false;

  constructor(options: ResolvedSentinelOptions, hooks: SentinelHooks) {
    this.#o = options;
    this.#hooks = hooks;
    this.#list = [...options.sentinels];
  }

  /** The sentinels known now, the one that answered last first. */
  get known(): readonly SentinelAddress[] {
    return this.#list;
  }

  /** Start the periodic check (the subscription opens with the first answer). */
  start(): void {
    if (this.#closed || this.#timer !== undefined) return;
    this.#timer = setInterval(() => void this.#check(), this.#o.checkIntervalMs);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** Stop checking and close the sentinel connection. */
  stop(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#watch?.destroy();
    this.#watch = undefined;
  }

  /**
   * Ask the sentinels, in order, which server is the master, the first that
   * knows answering.
   *
   * @throws {ConnectionError} (as a rejection) when no sentinel answers: each
   * is tried once, within `connectTimeoutMs`, so this is bounded.
   */
  async master(): Promise<MasterAddress> {
    if (this.#closed) throw new ConnectionError("The client is closed");
    const watch = this.#watch;
    if (watch !== undefined && watch.connected) {
      try {
        return parseMaster(await watch.send(this.#question()), this.#o.name);
      } catch {
        // Ask the others, from the first.
      }
    }
    const errors: string[] = [];
    for (const sentinel of [...this.#list]) {
      let client: RedisClient | undefined;
      try {
        client = await this.#open(sentinel);
        const master = parseMaster(await client.send(this.#question()), this.#o.name);
        this.#prefer(sentinel);
        if (this.#watch === undefined) this.#keep(client);
        else client.destroy();
        return master;
      } catch (error) {
        client?.destroy();
        errors.push(`${sentinel.host}:${sentinel.port}: ${(error as Error).message}`);
      }
    }
    throw new ConnectionError(
      `No sentinel of ${JSON.stringify(this.#o.name)} named its master (${errors.join("; ")})`,
    );
  }

  #question(): string[] {
    return ["SENTINEL", "GET-MASTER-ADDR-BY-NAME", this.#o.name];
  }

  /** Move `sentinel` to the front: the next question goes to it first. */
  #prefer(sentinel: SentinelAddress): void {
    const i = this.#list.indexOf(sentinel);
    if (i > 0) this.#list = [sentinel, ...this.#list.slice(0, i), ...this.#list.slice(i + 1)];
  }

  async #open(sentinel: SentinelAddress): Promise<RedisClient> {
    const d = this.#o.data;
    const client = new RedisClient(resolveConnectOptions({
      host: sentinel.host,
      port: sentinel.port,
      ...(sentinel.username === undefined ? {} : { username: sentinel.username }),
      ...(sentinel.password === undefined ? {} : { password: sentinel.password }),
      tls: sentinel.tls ? (typeof d.tls === "object" ? d.tls : true) : false,
      // RESP3: the subscription and the questions share one connection.
      resp: 3,
      connectTimeoutMs: d.connectTimeoutMs,
      commandTimeoutMs: d.connectTimeoutMs,
      offlineQueue: false,
      reconnect: false,
    }));
    await client.ready;
    return client;
  }

  /** Keep `client` as the connection that hears `+switch-master`; when it is lost, open another. */
  #keep(client: RedisClient): void {
    if (this.#closed) {
      client.destroy();
      return;
    }
    this.#watch = client;
    client.onPush((push) => {
      if (push[0] !== "message" || push[1] !== SWITCH || typeof push[2] !== "string") return;
      // "<name> <old ip> <old port> <new ip> <new port>"
      const [name, , , host, port] = push[2].split(" ");
      if (name === this.#o.name && host !== undefined) this.#hooks.master({ host, port: Number(port) }, SWITCH);
    });
    client.onEvent((event) => {
      if (event.type !== "disconnect" || this.#watch !== client) return;
      this.#watch = undefined;
      client.destroy();
      // The next check (or the data connection's next attempt) finds another sentinel.
    });
    client.send(["SUBSCRIBE", SWITCH]).catch(() => {
      if (this.#watch !== client) return;
      this.#watch = undefined;
      client.destroy();
    });
  }

  /** The periodic check: the master (a missed `+switch-master`), and the sentinels' list. */
  async #check(): Promise<void> {
    if (this.#checking || this.#closed) return;
    this.#checking = true;
    try {
      const master = await this.master();
      this.#hooks.master(master, "a periodic check");
      await this.#refresh();
    } catch (error) {
      if (!this.#closed) this.#hooks.emit({ type: "error", server: `sentinels of ${this.#o.name}`, error });
    } finally {
      this.#checking = false;
    }
  }

  /** Add the sentinels the one we talk to knows of (with the credentials of the first given). */
  async #refresh(): Promise<void> {
    const watch = this.#watch;
    if (watch === undefined || !watch.connected) return;
    const reply = await watch.send(["SENTINEL", "SENTINELS", this.#o.name]);
    if (!Array.isArray(reply)) return;
    const first = this.#o.sentinels[0]!;
    for (const entry of reply) {
      const fields = asFields(entry);
      const host = fields.get("ip");
      const port = Number(fields.get("port"));
      if (host === undefined || !Number.isInteger(port)) continue;
      if (this.#list.some((s) => s.host === host && s.port === port)) continue;
      this.#list.push({ host, port, username: first.username, password: first.password, tls: first.tls });
    }
  }
}

/** `SENTINEL GET-MASTER-ADDR-BY-NAME`'s reply: `[ip, port]`, or null when the sentinel does not know the name. */
function parseMaster(reply: Reply, name: string): MasterAddress {
  if (Array.isArray(reply) && reply.length === 2) {
    const port = Number(reply[1]);
    if (typeof reply[0] === "string" && Number.isInteger(port)) return { host: reply[0], port };
  }
  throw new Error(`it does not know a master named ${JSON.stringify(name)}`);
}

/** A RESP3 map or a RESP2 flat array of field and value, as a map of strings. */
function asFields(entry: Reply): Map<string, string> {
  const out = new Map<string, string>();
  if (Array.isArray(entry)) {
    for (let i = 0; i + 1 < entry.length; i += 2) out.set(String(entry[i]), String(entry[i + 1]));
  } else if (
    entry !== null && typeof entry === "object" && !(entry instanceof Uint8Array) && !(entry instanceof Error)
  ) {
    for (const [k, v] of Object.entries(entry)) out.set(k, String(v));
  }
  return out;
}
