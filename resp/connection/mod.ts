/**
 * One socket's life and what rides on it: commands and their FIFO, the
 * encoder, deadlines, the handshake, pub/sub and tracking state, reconnect
 * backoff. `client.ts` builds a `RedisClient` from these.
 *
 * @module
 */
export { reconnectDelay } from "./backoff.ts";
export {
  checkArgs,
  checkSendOptions,
  Command,
  commandName,
  QUEUED,
  SEND_OPTIONS,
  SETTLED,
  WRITTEN,
} from "./command.ts";
export { Connection, type ConnectionHooks } from "./connection.ts";
export { type Deadline, Deadlines } from "./deadlines.ts";
export { exposeDeadlines } from "./debug.ts";
export { CommandWriter, type CommandWriterOptions, encodeCommand } from "./encode.ts";
export { explainNoPerm, explainScriptFailure, patternOf } from "./acl.ts";
export { handshake, type HandshakeOutcome } from "./handshake.ts";
export { Subscriptions } from "./subscriptions.ts";
export { ClientTracking } from "./tracking.ts";
