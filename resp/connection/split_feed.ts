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
 * `npm run bench` measured it (bench/README.md, "What limits each figure").
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
/**
 * The first half must complete at least this many replies for the rest to
 * wait a turn: with large replies (a few KiB each) a chunk holds few of them,
 * and waiting a turn per chunk cost more than the overlap won (GET of 4 KiB
 * values with 100 in flight: 121k-170k/s split at every chunk, 391k-407k not).
 */
export const SPLIT_REPLIES = 16;

/** The largest copy buffer kept between splits: the size of a read on node:net. */
const KEEP_BYTES = 64 * 1024;

/** Feeds a decoder whole chunks, or a large one in two turns. */
export class SplitFeed {
  readonly #feed: (chunk: Uint8Array) => number;
  /**
   * Where the bytes for the next turn are copied (the transport reuses its
   * read buffer), kept from split to split: one allocation instead of one
   * per split, since the decoder keeps no view of what it is fed.
   */
  #rest = new Uint8Array(0);
  /** Bytes waiting in `#rest`; -1 when none wait (0 bytes may wait too, after an empty read). */
  #waiting = -1;

  /**
   * @param feed hands bytes to the decoder, which keeps no view of them once
   * it returns, and returns how many replies they completed.
   */
  constructor(feed: (chunk: Uint8Array) => number) {
    this.#feed = feed;
  }

  /** True while bytes wait for the next turn. */
  get waiting(): boolean {
    return this.#waiting >= 0;
  }

  /**
   * Decode `chunk` now, or, when `split`, its first half now and the rest in
   * the next turn if that half completed {@linkcode SPLIT_REPLIES} replies.
   * The chunk may be reused by its transport once this returns (what waits
   * is a copy).
   */
  push(chunk: Uint8Array, split: boolean): void {
    if (this.#waiting >= 0) {
      this.#keep(chunk, 0);
      return;
    }
    if (!split) {
      this.#feed(chunk);
      return;
    }
    const cut = chunk.length >>> 1;
    if (this.#feed(chunk.subarray(0, cut)) < SPLIT_REPLIES) {
      this.#feed(chunk.subarray(cut));
      return;
    }
    this.#waiting = 0;
    this.#keep(chunk, cut);
    setImmediate(this.flush);
  }

  /** Forget what waits: the connection is being destroyed and fails its commands itself. */
  drop(): void {
    this.#waiting = -1;
  }

  /** Decode what waits, now (the next turn came, or the socket closed and its replies come first). */
  readonly flush = (): void => {
    const n = this.#waiting;
    if (n < 0) return;
    this.#waiting = -1;
    const rest = this.#rest;
    // A burst that grew it past a read buffer's size is not kept for good.
    if (rest.length > KEEP_BYTES) this.#rest = new Uint8Array(0);
    this.#feed(rest.subarray(0, n));
  };

  /** Append `chunk` from `start` to what waits. */
  #keep(chunk: Uint8Array, start: number): void {
    const n = this.#waiting;
    const need = n + chunk.length - start;
    if (need > this.#rest.length) {
      const grown = new Uint8Array(Math.max(need, this.#rest.length * 2));
      grown.set(this.#rest.subarray(0, n));
      this.#rest = grown;
    }
    this.#rest.set(chunk.subarray(start), n);
    this.#waiting = need;
  }
}
