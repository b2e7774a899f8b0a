/**
 * What a fresh connection sends before any command of the caller's: AUTH,
 * then HELLO 3 (with SETNAME in it) for RESP3, or CLIENT SETNAME for RESP2,
 * SELECT, and the subscriptions to restore, all in one write. A refusal
 * (a wrong password, a db out of range) rejects with a `ConnectionError`
 * that names the URL (password hidden) and what was refused, the server's
 * `RedisReplyError` as its cause.
 *
 * Some refusals are not fatal:
 * - a RESP2 `CLIENT SETNAME` the user may not send (an ACL without
 *   `client|setname`) or the server does not know (`CLIENT` renamed away,
 *   as some managed services do): the connection goes on without its name
 *   and the caller hears why, since a name is a convenience for `CLIENT
 *   LIST`, never a need;
 * - `HELLO 3` refused (a server older than Redis 6, a proxy that does not
 *   know it, a server without protocol 3) when the protocol was not asked for
 *   explicitly: the connection goes on in RESP2. AUTH is its own command,
 *   not HELLO's AUTH option, for that: the login and the SELECT behind it
 *   stand whatever HELLO's answer, so nothing has to be sent again.
 *
 * A server that needs a password and was given none refuses the handshake
 * itself, on RESP2 as on RESP3, naming the missing password: when no step
 * would be refused with NOAUTH (RESP2, no password, db 0, no name), a PING
 * goes with the handshake to find out.
 *
 * @module
 */
import { unexplained } from "./acl.ts";
import { Command } from "./command.ts";
import type { Connection } from "./connection.ts";
import { ConnectionError, RedisReplyError, TimeoutError, timeoutMessage } from "../errors.ts";
import type { ResolvedOptions } from "../options.ts";
import { isSubscribeKind, type Subscriptions } from "./subscriptions.ts";
import { describeTarget, describeUrl } from "../transport/mod.ts";
import type { Arg, Reply } from "../types.ts";

/** The step that asks whether the server needs a password none was given: any answer but NOAUTH says no. */
const PROBE: readonly Arg[] = Object.freeze(["PING"]);

/**
 * The handshake's commands, in order.
 *
 * @param o the client's resolved options.
 * @param subscriptions what the previous connection was subscribed to.
 * @returns the commands; empty when a RESP2 connection needs none.
 */
export function handshakeCommands(o: ResolvedOptions, subscriptions: Subscriptions): (readonly Arg[])[] {
  const steps: (readonly Arg[])[] = [];
  if (o.password !== undefined) {
    steps.push(o.username === undefined ? ["AUTH", o.password] : ["AUTH", o.username, o.password]);
  }
  if (o.resp === 3) {
    const hello: Arg[] = ["HELLO", 3];
    if (o.name !== undefined) hello.push("SETNAME", o.name);
    steps.push(hello);
  } else if (o.name !== undefined) steps.push(["CLIENT", "SETNAME", o.name]);
  if (o.db !== 0) steps.push(["SELECT", o.db]);
  steps.push(...subscriptions.restore());
  // Last, so its reply is the last one: a server the sentinels named may have
  // been demoted since (or not yet promoted).
  if (o.role !== undefined) steps.push(["ROLE"]);
  return steps;
}

/**
 * Run the handshake on `connection` and resolve once every step is
 * answered.
 *
 * @param connection a connection just opened, with nothing written on it yet.
 * @param o the client's resolved options; `connectTimeoutMs` bounds the wait.
 * @param subscriptions what to subscribe to again.
 * @param along commands that leave in the handshake's write, after it (a lazy client's first commands); not waited for.
 * @throws {ConnectionError} (as a rejection) when the server refuses a step (its `RedisReplyError` as the cause), or for anything else, a `TimeoutError` after `connectTimeoutMs` as its cause.
 */
export async function handshake(
  connection: Connection,
  o: ResolvedOptions,
  subscriptions: Subscriptions,
  along: readonly Command[] = [],
): Promise<HandshakeOutcome> {
  try {
    const steps = handshakeCommands(o, subscriptions);
    // Any step is refused with NOAUTH when a login is needed and none was
    // given. With no step, a PING asks, unless commands go along (a lazy
    // client's first): they ask themselves, and their NOAUTH names the
    // missing password (connection.ts), at no extra command per connection.
    if (steps.length === 0 && along.length === 0) steps.push(PROBE);
    if (steps.length === 0) {
      connection.writeFirst(along);
      return {};
    }
    const outcome = await exchange(connection, o, steps, along);
    if (outcome.helloRefused === undefined) return outcome;
    // RESP2 from here on. What HELLO carried (the name) is sent the RESP2
    // way, and without a password a PING asks whether one is needed: on a
    // server older than HELLO nothing else in the handshake may have asked.
    const rest: (readonly Arg[])[] = [];
    if (o.name !== undefined) rest.push(["CLIENT", "SETNAME", o.name]);
    if (o.password === undefined) rest.push(PROBE);
    const after = rest.length === 0 ? {} : await exchange(connection, { ...o, resp: 2, role: undefined }, rest, []);
    return { ...after, helloRefused: outcome.helloRefused };
  } catch (caught) {
    const { step, error: cause } = isRefused(caught) ? caught : { step: undefined, error: caught };
    throw handshakeError(o, step, cause);
  }
}

/** A handshake step that failed, and why. */
interface Refused {
  readonly step: readonly Arg[] | undefined;
  readonly error: unknown;
}

function isRefused(value: unknown): value is Refused {
  return typeof value === "object" && value !== null && "error" in value && "step" in value;
}

/** Why the handshake failed, as a ConnectionError: `step` is the refused step, when one was. */
function handshakeError(o: ResolvedOptions, step: readonly Arg[] | undefined, cause: unknown): ConnectionError {
  if (cause instanceof RedisReplyError) return new ConnectionError(refusal(o, step, cause), { cause });
  return new ConnectionError(
    `Cannot connect to ${describeTarget(o)}: the handshake failed (${(cause as Error).message})`,
    { cause },
  );
}

/** What a handshake that succeeded left out. */
export interface HandshakeOutcome {
  /** The server's refusal of `CLIENT SETNAME` (RESP2): connected without the name. */
  readonly nameRefused?: RedisReplyError;
  /** The server's refusal of `HELLO 3` (`resp` not given): connected in RESP2, the connection already switched. */
  readonly helloRefused?: RedisReplyError;
}

/**
 * True for a refusal of `HELLO 3` that means "no RESP3 here": a server or a
 * proxy that does not know HELLO, or one that does not speak protocol 3
 * (`NOPROTO`). NOAUTH is not one: a password is missing.
 */
export function isHelloRefusal(error: unknown): error is RedisReplyError {
  return error instanceof RedisReplyError &&
    (error.code === "NOPROTO" || /unknown command|unsupported command|not supported/i.test(error.message));
}

/** True for a refusal of `CLIENT SETNAME` that only means "no name here": no permission, or no such command. */
export function isNameRefusal(error: unknown): error is RedisReplyError {
  return error instanceof RedisReplyError &&
    (error.code === "NOPERM" || /unknown (sub)?command/i.test(error.message));
}

function isSetName(args: readonly Arg[]): boolean {
  return typeof args[0] === "string" && args[0].toUpperCase() === "CLIENT" && args[1] === "SETNAME";
}

const AUTH_CODES = new Set(["WRONGPASS", "NOAUTH", "NOPERM"]);

/** A refusal that says the login is missing or wrong. */
function isAuthRefusal(error: unknown): boolean {
  return error instanceof RedisReplyError && (error.code === "NOAUTH" || error.code === "WRONGPASS");
}

/** What the server refused, in words: the URL (password hidden), the step, the server's text. */
function refusal(o: ResolvedOptions, step: readonly Arg[] | undefined, error: RedisReplyError): string {
  const url = describeUrl(o);
  const name = typeof step?.[0] === "string" ? step[0].toUpperCase() : "";
  if (error.code === "NOPERM" && /permissions to run/.test(error.message)) {
    // Logged in, but the user's ACL lacks a handshake command (HELLO, SELECT): the message names the rule to add.
    const who = o.username === undefined ? "the default user" : `user ${JSON.stringify(o.username)}`;
    return `Cannot connect to ${url}: ${who} may not run ${name || "the handshake"} (${error.message})`;
  }
  const auth = AUTH_CODES.has(error.code) || name === "AUTH";
  if (auth) {
    const who = o.username === undefined ? "the default user" : `user ${JSON.stringify(o.username)}`;
    const what = o.password === undefined
      ? `the server requires a password and none was given`
      : `the server refused the password of ${who}`;
    return `Cannot connect to ${url}: ${what} (${error.message})`;
  }
  if (name === "SELECT") return `Cannot connect to ${url}: the server refused SELECT ${o.db} (${error.message})`;
  return `Cannot connect to ${url}: the server refused ${name || "the handshake"} (${error.message})`;
}

/** Write `steps` (and `along`) in one write and wait for every reply, within `connectTimeoutMs`. */
async function exchange(
  connection: Connection,
  o: ResolvedOptions,
  steps: readonly (readonly Arg[])[],
  along: readonly Command[],
): Promise<HandshakeOutcome> {
  const commands: Command[] = [];
  let nameRefused: RedisReplyError | undefined;
  let helloRefused: RedisReplyError | undefined;
  const replies = steps.map((args) => {
    const cmd = new Command(args, false);
    const tolerated = isSetName(args);
    const hello = args[0] === "HELLO";
    const reply = new Promise<Reply>((resolve, reject) => {
      cmd.resolve = resolve;
      // Which step failed decides the message (a password, a database).
      cmd.reject = (explained) => {
        const error = unexplained(explained);
        if (tolerated && isNameRefusal(error)) {
          nameRefused = error;
          resolve(null);
        } else if (hello && o.respFallback && isHelloRefusal(error)) {
          // Synchronously, from the reply handler: the replies after this
          // one (a RESP2 subscription's confirmations) are read as RESP2.
          helloRefused = error;
          connection.speakResp2();
          // The client's own options, so `client.resp` says 2 before any later reply is handed out.
          o.resp = 2;
          o.respFallback = false;
          resolve(null);
        } else {
          // The commands behind the handshake fail with its error, at once:
          // their own replies (NOAUTH) may be decoded in the same read.
          for (const c of along) c.fail(handshakeError(o, args, error));
          reject({ step: args, error } satisfies Refused);
        }
      };
      // ROLE is an @admin command a least-privilege user may lack: its refusal is an answer, judged below.
      if (args[0] === "ROLE") cmd.reject = (error) => resolve(unexplained(error) as RedisReplyError);
      // The probe asks one thing: whether a login is needed. Any other refusal (an ACL without PING, a renamed
      // PING, a busy script) says no.
      if (args === PROBE) {
        const refuse = cmd.reject;
        cmd.reject = (error) => (isAuthRefusal(error) ? refuse(error) : resolve(null));
      }
    });
    // A restored subscription gets one confirmation per channel.
    if (typeof args[0] === "string" && isSubscribeKind(args[0].toLowerCase())) cmd.expect = args.length - 1;
    commands.push(cmd);
    return reply;
  });
  connection.writeFirst(along.length === 0 ? commands : [...commands, ...along]);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const timedOut = new TimeoutError(
        timeoutMessage("The handshake", "connectTimeoutMs", o.connectTimeoutMs),
        o.connectTimeoutMs,
        { setting: "connectTimeoutMs", timeoutMs: o.connectTimeoutMs },
      );
      for (const c of along) c.fail(handshakeError(o, undefined, timedOut));
      reject({ step: undefined, error: timedOut } satisfies Refused);
    }, o.connectTimeoutMs);
  });
  let answers: Reply[];
  try {
    answers = await Promise.race([Promise.all(replies), timeout]);
  } finally {
    clearTimeout(timer);
  }
  if (o.role !== undefined) checkRole(answers[answers.length - 1]!, o.role);
  return {
    ...(nameRefused === undefined ? {} : { nameRefused }),
    ...(helloRefused === undefined ? {} : { helloRefused }),
  };
}

/** The last handshake step's answer: ROLE's reply, or its refusal. */
function checkRole(role: Reply, expected: string): void {
  // Refused by the ACL: the server stays unchecked, and a replica is found out by its READONLY replies.
  if (role instanceof RedisReplyError && role.code === "NOPERM") return;
  if (role instanceof RedisReplyError) throw { step: ["ROLE"], error: role } satisfies Refused;
  const said = Array.isArray(role) ? String(role[0]) : String(role);
  if (said !== expected) throw new Error(`ROLE says ${said}, not ${expected}`);
}
