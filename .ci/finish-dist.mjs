// The last step of `npm run build`, after tsc wrote dist/:
//
// - JSDoc examples import "@herdless/herdless", the name jsr.io shows them
//   under; in the npm package they are rewritten to "herdless", the name an
//   npm user installed, so an example copied from an editor's hover runs.
// - Every .js file names its declarations with `// @ts-self-types`, so a Deno
//   user who imports dist/mod.js by path (or through a CDN) gets the types
//   instead of type-checking the JavaScript; and the declarations import each
//   other as ".js" (tsc keeps the sources' ".ts", which TypeScript maps to
//   the .d.ts but Deno takes literally: a file that is not there).
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";

const dist = new URL("../dist/", import.meta.url).pathname;

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else out.push(path);
  }
  return out;
}

let rewritten = 0;
let typed = 0;
for (const path of walk(dist)) {
  if (!path.endsWith(".js") && !path.endsWith(".d.ts")) continue;
  let text = readFileSync(path, "utf8");
  const before = text;
  text = text.replaceAll('"@herdless/herdless', '"herdless');
  if (text !== before) rewritten++;
  if (path.endsWith(".d.ts")) {
    text = text.replace(/(\bfrom\s*|\bimport\s*\(\s*)"(\.{1,2}\/[^"]*?)(?<!\.d)\.ts"/g, '$1"$2.js"');
  }
  const declarations = path.replace(/\.js$/, ".d.ts");
  if (path.endsWith(".js") && declarations !== path && statSync(declarations, { throwIfNoEntry: false })) {
    const directive = `// @ts-self-types="./${basename(declarations)}"\n`;
    if (!text.startsWith(directive)) text = directive + text;
    typed++;
  }
  if (text !== before) writeFileSync(path, text);
}
console.log(`dist: ${rewritten} files import "herdless" in their examples, ${typed} .js files name their .d.ts`);
