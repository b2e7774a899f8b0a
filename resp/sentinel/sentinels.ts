/**
 * What the client knows of the sentinels: their list (as given, plus those
 * the last answer of `SENTINEL sentinels` named, at most
 * {@linkcode MAX_LEARNED_SENTINELS}), which one answered last (asked first
 * next time, as the Sentinel client guidelines ask), and one connection kept
 * to one of them, subscribed to `+switch-master` and used for the questions.
 * Any one signal of a failover can be missed (a message lost with its
 * connection, a sentinel that was partitioned away), so the master is also
 * asked for again every `checkIntervalMs`.
 *
 * A sentinel's word is checked before it is used: an address it names (the
 * master, a switch, another sentinel) must be a host and a port in
 * 1..65535. A master named badly is that sentinel's failure (the next one is
 * asked); a bad switch message or list entry is ignored.
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

/**
 * Most sentinels kept from `SENTINEL sentinels`, besides those given: the
 * list is what that answer says now (not everything any answer ever said),
 * and a sentinel that sends thousands of entries costs one pass over them.
 */
export const MAX_LEARNED_SENTINELS = 32;

/** The sentinels of one master group. */
export class Sentinels {
  readonly #o: ResolvedSentinelOptions;
  readonly #hooks: SentinelHooks;
  /** Those the last answer of `SENTINEL sentinels` named (not given), at most MAX_LEARNED_SENTINELS. */
  #learned: SentinelAddress[] = [];
  /** The one that answered last: asked first. */
  #preferred: SentinelAddress | undefined;
  #watch: RedisClient | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #checking = false;
  #closed = false;

  constructor(options: ResolvedSentinelOptions, hooks: SentinelHooks) {
    this.#o = options;
    this.#hooks = hooks;
  }

  /** The sentinels known now: the one that answered last, then those given, then those learned. */
  get known(): readonly SentinelAddress[] {
    const preferred = this.#preferred;
    const rest = [...this.#o.sentinels, ...this.#learned];
    return preferred === undefined ? rest : [preferred, ...rest.filter((s) => s !== preferred)];
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
    for (const sentinel of this.known) {
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

  /** The next question goes to `sentinel` first. */
  #prefer(sentinel: SentinelAddress): void {
    this.#preferred = sentinel;
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
      // "<name> <old ip> <old port> <new ip> <new port>"; one that names no address is ignored (the checks go on).
      const [name, , , host, port] = push[2].split(" ");
      const to = name === this.#o.name ? address(host, port) : undefined;
      if (typeof to === "object") this.#hooks.master(to, SWITCH);
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

  /**
   * Learn the sentinels the one we talk to knows of now (with the
   * credentials of the first given): its answer replaces what was learned
   * before, entries that name no address and repeats left out, at most
   * MAX_LEARNED_SENTINELS; one pass over the answer, however long.
   */
  async #refresh(): Promise<void> {
    const watch = this.#watch;
    if (watch === undefined || !watch.connected) return;
    const reply = await watch.send(["SENTINEL", "SENTINELS", this.#o.name]);
    if (!Array.isArray(reply)) return;
    const first = this.#o.sentinels[0]!;
    const seen = new Set(this.#o.sentinels.map((s) => `${s.host}:${s.port}`));
    const learned: SentinelAddress[] = [];
    for (const entry of reply) {
      if (learned.length >= MAX_LEARNED_SENTINELS) break;
      const fields = asFields(entry);
      const at = address(fields.get("ip"), fields.get("port"));
      if (typeof at === "string") continue;
      const key = `${at.host}:${at.port}`;
      if (seen.has(key)) continue;
      seen.add(key);
      learned.push({ ...at, username: first.username, password: first.password, tls: first.tls });
    }
    this.#learned = learned;
  }
}

/**
 * `host` and `port` as a sentinel sent them, checked: a host of 1 to 255
 * printable ASCII characters and no space (an address or a host name), a
 * port of digits in 1..65535. Returns the address, or what is wrong with it.
 */
export function address(host: unknown, port: unknown): MasterAddress | string {
  if (typeof host !== "string" || host.length > 255 || !/^[!-~]+$/.test(host)) {
    return `a host that is no host name or address (${describe(host)})`;
  }
  const text = typeof port === "number" ? String(port) : port;
  const n = typeof text === "string" && /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= 65535)) return `a port that is no integer in 1..65535 (${describe(port)})`;
  return { host, port: n };
}

/** A value from a sentinel, as a message shows it: short, and printable. */
function describe(value: unknown): string {
  if (typeof value !== "string") return value === undefined ? "none" : typeof value;
  const text = JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}...` : value);
  return text;
}

/**
 * `SENTINEL GET-MASTER-ADDR-BY-NAME`'s reply: `[ip, port]`, or null when the
 * sentinel does not know the name. Anything else is that sentinel's failure,
 * a `ConnectionError`: the next sentinel is asked.
 */
function parseMaster(reply: Reply, name: string): MasterAddress {
  if (reply === null || (Array.isArray(reply) && reply.length === 0)) {
    throw new ConnectionError(`it does not know a master named ${JSON.stringify(name)}`);
  }
  if (!Array.isArray(reply) || reply.length !== 2) {
    throw new ConnectionError(`it answered the master of ${JSON.stringify(name)} with no [ip, port] pair`);
  }
  const master = address(reply[0], reply[1]);
  if (typeof master === "string") {
    throw new ConnectionError(`it named a master of ${JSON.stringify(name)} with ${master}`);
  }
  return master;
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
