/**
 * Builds reply trees from decoded values for the RESP decoder: open
 * aggregates on an explicit stack, attributes kept apart, pushes routed to
 * their own handler. Knows nothing of bytes. Internal; not re-exported.
 *
 * @module
 */
import { ProtocolError } from "../errors.ts";
import type { Reply, ReplyMap } from "../types.ts";
import { keyOf } from "./scalars.ts";

/** Where finished top-level frames go (the decoder's handlers). */
export interface TreeHandlers {
  reply(value: Reply, attribute: ReplyMap | undefined): void;
  push(value: Reply[]): void;
  /** A large payload of a reply (not of a push) was announced; see `DecoderHandlers.announced`. */
  announced?(length: number): void;
}

/** An array, a set, or a push nested inside something (then just an array). */
export const ARRAY = 0;
/** A push (`>`); only at top level does it go to `handlers.push`. */
export const PUSH = 1;
export const MAP = 2;
export const ATTRIBUTE = 3;
/** Entry count of a streamed aggregate (`*?`), which ends with `.`. */
export const STREAMED = -1;

/** One open aggregate. Frames are reused by depth, so decoding allocates only values. */
class Frame {
  kind = ARRAY;
  /** Elements still expected (maps: keys and values), or -1 while streamed. */
  left = 0;
  /** Entries so far of a streamed aggregate, checked against maxAggregateLength. */
  count = 0;
  /** Absolute offset of the header, where a streamed aggregate that grows too long is reported. */
  at = 0;
  items: Reply[] | null = null;
  map: ReplyMap | null = null;
  key = "";
  hasKey = false;
}

/**
 * The aggregates open at the decoder's position and where finished values
 * go. Iterative throughout: a value that completes 50,000 nested arrays
 * closes them in a loop, not 50,000 calls deep.
 */
export class ReplyTree {
  /** Open aggregates; the value being decoded is at top level when 0. */
  depth = 0;
  /** Top-level attribute waiting for the reply it annotates. */
  attribute: ReplyMap | undefined = undefined;
  readonly frames: Frame[] = [];
  readonly handlers: TreeHandlers;
  readonly maxLength: number;
  readonly maxDepth: number;

  constructor(handlers: TreeHandlers, maxLength: number, maxDepth: number) {
    this.handlers = handlers;
    this.maxLength = maxLength;
    this.maxDepth = maxDepth;
  }

  /**
   * Opens an aggregate of `n` entries (`STREAMED` for `?`) whose header is at
   * absolute offset `at`; an empty one is finished at once.
   */
  open(kind: number, n: number, at: number): void {
    const depth = this.depth;
    if (depth >= this.maxDepth) {
      throw new ProtocolError(`Invalid RESP: aggregates nested deeper than ${this.maxDepth}`, at);
    }
    if (kind === PUSH && depth !== 0) kind = ARRAY;
    if (n === 0) {
      this.closed(kind, kind >= MAP ? (Object.create(null) as ReplyMap) : []);
      return;
    }
    let frame = this.frames[depth];
    if (frame === undefined) {
      frame = new Frame();
      this.frames.push(frame);
    }
    frame.kind = kind;
    frame.at = at;
    frame.count = 0;
    frame.hasKey = false;
    // Maps take two elements (key, value) per entry.
    frame.left = n === STREAMED ? -1 : kind >= MAP ? n * 2 : n;
    // Never `new Array(n)`: elements are pushed as they arrive, so a
    // declared count costs nothing until the elements really come.
    if (kind >= MAP) frame.map = Object.create(null) as ReplyMap;
    else frame.items = [];
    this.depth = depth + 1;
  }

  /** `.` at absolute offset `at` ends the innermost aggregate, which must be streamed and not halfway through a map entry. */
  end(at: number): void {
    const frame = this.depth > 0 ? this.frames[this.depth - 1]! : undefined;
    if (frame === undefined || frame.left !== -1) {
      throw new ProtocolError("Invalid RESP: '.' outside a streamed aggregate", at);
    }
    if (frame.hasKey) throw new ProtocolError("Invalid RESP: streamed map ended between a key and its value", at);
    this.depth--;
    this.closed(frame.kind, take(frame));
  }

  /**
   * Places a complete value: into the innermost open aggregate, closing
   * every aggregate it completes, or out to the `reply` handler.
   */
  value(value: Reply): void {
    let v = value;
    while (this.depth > 0) {
      const frame = this.frames[this.depth - 1]!;
      if (frame.kind < MAP) frame.items!.push(v);
      else if (frame.hasKey) {
        // A null-prototype object: `__proto__` becomes an own key, never the
        // prototype (ioredis#1267).
        frame.map![frame.key] = v;
        frame.hasKey = false;
      } else {
        frame.key = keyOf(v);
        frame.hasKey = true;
      }
      if (frame.left === -1) {
        if (!frame.hasKey && ++frame.count > this.maxLength) {
          throw new ProtocolError(`Invalid RESP: streamed aggregate longer than ${this.maxLength}`, frame.at);
        }
        return;
      }
      if (--frame.left !== 0) return;
      this.depth--;
      const kind = frame.kind;
      v = take(frame);
      if (kind === ATTRIBUTE) return this.attributed(v as ReplyMap);
      if (kind === PUSH) return this.pushed(v as Reply[]);
    }
    const attribute = this.attribute;
    this.attribute = undefined;
    this.handlers.reply(v, attribute);
  }

  /** Routes a finished aggregate: attribute, push, or a value for its parent. */
  closed(kind: number, value: Reply): void {
    if (kind === ATTRIBUTE) this.attributed(value as ReplyMap);
    else if (kind === PUSH) this.pushed(value as Reply[]);
    else this.value(value);
  }

  /**
   * An attribute at top level waits for the next reply (two in a row
   * merge); nested inside an aggregate it is dropped and is not an element
   * of its parent, as RESP3 lets a client do.
   */
  attributed(map: ReplyMap): void {
    if (this.depth !== 0) return;
    if (this.attribute === undefined) this.attribute = map;
    else Object.assign(this.attribute, map);
  }

  /** A top-level push. An attribute just before it annotated the push, not the next reply: drop it. */
  pushed(items: Reply[]): void {
    this.attribute = undefined;
    this.handlers.push(items);
  }
}

/** Detaches a finished frame's value so the reused frame keeps no reference to it. */
function take(frame: Frame): Reply {
  if (frame.kind >= MAP) {
    const map = frame.map!;
    frame.map = null;
    return map;
  }
  const items = frame.items!;
  frame.items = null;
  return items;
}
