#!/usr/bin/env bash
# Instructions per operation of bench/experiments/client_path.ts under callgrind:
# (I refs at N2 ops - I refs at N1 ops) / (N2 - N1), per scenario. Usage:
#   bench/experiments/client_path_cg.sh redis://127.0.0.1:6402 "get100 getseq set1000 eval100" [N1] [N2]
# It bundles the experiment first with the root's esbuild.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
url="$1"; scenarios="$2"; n1="${3:-2000}"; n2="${4:-22000}"
out="$here/../.out"
mkdir -p "$out"
"$here/../../node_modules/.bin/esbuild" --bundle --platform=node --format=esm --log-level=warning \
  "$here/client_path.ts" --outfile="$out/client_path.mjs"
refs() {
  valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file=/dev/null \
    node ${NODE_FLAGS---single-threaded --random-seed=42} "$out/client_path.mjs" "$url" "$1" "$2" >"$out/client_path.log" 2>&1 || { cat "$out/client_path.log" >&2; exit 1; }
  sed -n 's/.*I *refs: *//p' "$out/client_path.log" | tr -d ,
}
for s in $scenarios; do
  a=$(refs "$s" "$n1"); b=$(refs "$s" "$n2")
  echo "$s: $(( (b - a) / (n2 - n1) )) instructions/op (I refs $a at $n1, $b at $n2)"
done
