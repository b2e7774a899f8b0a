/**
 * What a fresh connection sends before any command of the caller's: HELLO
 * (RESP3, with AUTH and SETNAME in it) or AUTH and CLIENT SETNAME (RESP2),
 * SELECT, and the subscriptions to restore, all in one write. A refusal
 * (a wrong password, a db out of range) rejects with the server's
 * `RedisReplyError`.
 *
 * @module
 */
import { Command } from "./_command.ts";
import type { Connection } from "./connection.ts";
import { TimeoutError } from "./errors.ts";
import type { ResolvedOptions } from "./options.ts";
import { isSubscribeKind, type Subscriptions } from "./subscriptions.ts";
import type { Arg, Reply } from "./types.ts";

/**
 * The handshake's commands, in order.
 *
 * @param o the client's resolved options.
 * @param subscriptions what the previous connection was subscribed to.
 * @returns the commands; empty when a RESP2 connection needs none.
 */
export function handshakeCommands(o: ResolvedOptions, subscriptions: Subscriptions): Arg[][] {
  const steps: Arg[][] = [];
  if (o.resp === 3) {
    const hello: Arg[] = ["HELLO", 3];
    if (o.password !== undefined) hello.push("AUTH", o.username ?? "default", o.password);
    if (o.name !== undefined) hello.push("SETNAME", o.name);
    steps.push(hello);
  } else {
    if (o.password !== undefined) {
      steps.push(o.username === undefined ? ["AUTH", o.password] : ["AUTH", o.username, o.password]);
    }
    if (o.name !== undefined) steps.push(["CLIENT", "SETNAME", o.name]);
  }
  if (o.db !== 0) steps.push(["SELECT", o.db]);
  steps.push(...subscriptions.restore());
  return steps;
}

/**
 * Run the handshake on `connection` and resolve once every step is
 * answered.
 *
 * @param connection a connection just opened, with nothing written on it yet.
 * @param o the client's resolved options; `connectTimeoutMs` bounds the wait.
 * @param subscriptions what to subscribe to again.
 * @throws {RedisReplyError} (as a rejection) when the server refuses a step.
 * @throws {TimeoutError} (as a rejection) when the replies take longer than `connectTimeoutMs`.
 */
export async function handshake(
  connection: Connection,
  o: ResolvedOptions,
  subscriptions: Subscriptions,
): Promise<void> {
  const steps = handshakeCommands(o, subscriptions);
  if (steps.length === 0) return;
  const commands: Command[] = [];
  const replies = steps.map((args) => {
    const cmd = new Command(args, false);
    const reply = new Promise<Reply>((resolve, reject) => {
      cmd.resolve = resolve;
      cmd.reject = reject;
    });
    // A restored subscription gets one confirmation per channel.
    if (typeof args[0] === "string" && isSubscribeKind(args[0].toLowerCase())) cmd.expect = args.length - 1;
    commands.push(cmd);
    return reply;
  });
  connection.writeFirst(commands);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new TimeoutError(`handshake timed out after ${o.connectTimeoutMs} ms`, o.connectTimeoutMs));
    }, o.connectTimeoutMs);
  });
  try {
    await Promise.race([Promise.all(replies), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
