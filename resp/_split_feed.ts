/**
 * Decoding a large chunk of replies in two turns of the event loop, so the
 * client and the server work at the same time instead of taking turns.
 *
 * With many commands in flight, the server answers a whole batch at once
 * and the replies arrive in one socket read. Decoded in one go, every caller
 * resumes only after the last reply, their next commands leave in one write
 * at the end, and the server sits idle while the client decodes (then the
 * client idles while the server works). Decoding the first half, then
 * letting the event loop run before the rest, lets the callers of the first
 * half send their next commands (one write, as always) while the second
 * half is decoded: the server starts on them a half-batch sooner.
 * `npm run bench` measured it (bench/README.md, "Decoding in two turns").
 *
 * Replies keep their order: bytes that arrive while a half waits go behind
 * it, and a socket that closes first hands its waiting bytes to the decoder
 * before its commands are failed, since their replies did arrive.
 *
 * @module
 */
import { setImmediate } from "node:timers";

/** A chunk shorter than this is decoded at once: the split costs a turn of the event loop. */
export const SPLIT_BYTES = 2048;
/**
 * Fewer commands waiting than this and a chunk is decoded at once: a lone
 * large reply gains nothing from waiting, and only callers that send again
 * make the overlap.
 */
export const SPLIT_WAITING = 8;

/** Feeds a decoder whole chunks, or a large one in two turns. */
export class SplitFeed {
  readonly #feed: (chunk: Uint8Array) => void;
  /** Bytes for the next turn, copies in order; undefined when none wait. */
  #rest: Uint8Array[] | undefined = undefined;

  /** @param feed hands bytes to the decoder; it may reuse nothing it was given once it returns. */
  constructor(feed: (chunk: Uint8Array) => void) {
    this.#feed = feed;
  }

  /** True while bytes wait for the next turn. */
  get waiting(): boolean {
    return this.#rest !== undefined;
  }

  /**
   * Decode `chunk` now, or its first half now and the rest in the next turn
   * when `split`. The chunk may be reused by its transport once this returns
   * (what waits is a copy).
   */
  push(chunk: Uint8Array, split: boolean): void {
    if (this.#rest !== undefined) {
      this.#rest.push(copy(chunk, 0));
      return;
    }
    if (!split) {
      this.#feed(chunk);
      return;
    }
    const cut = chunk.length >>> 1;
    this.#rest = [copy(chunk, cut)];
    setImmediate(this.flush);
    this.#feed(chunk.subarray(0, cut));
  }

  /** Forget what waits: the connection is being destroyed and fails its commands itself. */
  drop(): void {
    this.#rest = undefined;
  }

  /** Decode what waits, now (the next turn came, or the socket closed and its replies come first). */
  readonly flush = (): void => {
    const rest = this.#rest;
    if (rest === undefined) return;
    this.#rest = undefined;
    for (let i = 0; i < rest.length; i++) this.#feed(rest[i]!);
  };
}

/** The bytes of `chunk` from `start`, copied (a Node `Buffer`'s own `slice` would return a view). */
function copy(chunk: Uint8Array, start: number): Uint8Array {
  const out = new Uint8Array(chunk.length - start);
  out.set(chunk.subarray(start));
  return out;
}
