#!/usr/bin/env bash
# Instructions per operation of an experiment under callgrind:
# (I refs at N2 operations - I refs at N1) / (N2 - N1), per run. Usage:
#   bench/experiments/callgrind.sh hit_path redis://127.0.0.1:6401 "raw:100 full:100 near:1" [N1] [N2]
#   bench/experiments/callgrind.sh client_path redis://127.0.0.1:6402 "get100 getseq set1000 eval100" [N1] [N2]
# A run's words, split at ':', are the experiment's arguments after the URL; the operation count comes last.
# It bundles the experiment first with the esbuild of bench/ (or, not installed, the root's).
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
name="$1"; url="$2"; runs="$3"; n1="${4:-2000}"; n2="${5:-22000}"
out="$here/../.out"
mkdir -p "$out"
esbuild="$here/../node_modules/.bin/esbuild"
[ -x "$esbuild" ] || esbuild="$here/../../node_modules/.bin/esbuild"
"$esbuild" --bundle --platform=node --format=esm --log-level=warning "$here/$name.ts" --outfile="$out/$name.mjs"
refs() {
  valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file=/dev/null \
    node ${NODE_FLAGS---single-threaded --random-seed=42} "$out/$name.mjs" "$url" "$@" >"$out/$name.log" 2>&1 || { cat "$out/$name.log" >&2; exit 1; }
  sed -n 's/.*I *refs: *//p' "$out/$name.log" | tr -d ,
}
for run in $runs; do
  IFS=: read -r -a args <<<"$run"
  a=$(refs "${args[@]}" "$n1"); b=$(refs "${args[@]}" "$n2")
  echo "$name ${args[*]}: $(( (b - a) / (n2 - n1) )) instructions/operation (I refs $a at $n1, $b at $n2)"
done
