/**
 * The second OS process of the model-based test (model.test.ts; not a test
 * file itself). Arguments: <redis url> [near]. It reads one JSON request a
 * line on stdin (`{ n, reset }`, `{ n, op }` or `{ n, close: true }`),
 * runs it on its {@linkcode ModelProcess} (requests overlap: each runs as it
 * arrives) and writes `{ n, result }` a line on stdout.
 */
import process from "node:process";
import { createInterface } from "node:readline";
import { ModelProcess, type Op } from "./_model_ops.ts";

const withNear = process.argv.at(-1) === "near";
const url = process.argv.at(withNear ? -2 : -1)!;
const model = await ModelProcess.open(url, withNear);
const reply = (n: number, result: unknown) => process.stdout.write(`${JSON.stringify({ n, result })}\n`);

interface Request {
  n: number;
  reset?: string;
  op?: Op;
  close?: true;
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const request = JSON.parse(line) as Request;
  if (request.reset !== undefined) {
    model.reset(request.reset).then(() => reply(request.n, null));
  } else if (request.op !== undefined) {
    model.run(request.op).then((result) => reply(request.n, result));
  } else if (request.close) {
    model.close().then(() => {
      reply(request.n, null);
      process.exit(0);
    });
  }
});
process.stdout.write(`${JSON.stringify({ n: 0, result: "ready" })}\n`);
