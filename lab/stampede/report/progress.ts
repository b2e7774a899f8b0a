/**
 * A one-line progress display on stderr, redrawn in place, only when stderr
 * is a terminal: piped output and CI logs get the tables and nothing else.
 *
 * @module
 */
import process from "node:process";

/** Shows and clears the progress line. */
export interface Progress {
  show(text: string): void;
  clear(): void;
}

/** A progress line, or a silent one when stderr is not a TTY. */
export function progress(): Progress {
  const tty = process.stderr.isTTY === true;
  let last = 0;
  let shown = false;
  return {
    show(text) {
      const now = performance.now();
      // Ten redraws a second is plenty and keeps a busy run's terminal cheap.
      if (!tty || now - last < 100) return;
      last = now;
      shown = true;
      const width = Math.max(20, (process.stderr.columns || 100) - 1);
      process.stderr.write(`\r\x1b[K${text.length > width ? `${text.slice(0, width - 1)}…` : text}`);
    },
    clear() {
      if (tty && shown) process.stderr.write("\r\x1b[K");
      shown = false;
      last = 0;
    },
  };
}
