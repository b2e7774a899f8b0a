#!/usr/bin/env bash
# Instructions per hit of bench/experiments/hit_path.ts under callgrind:
# (I refs at N2 hits - I refs at N1 hits) / (N2 - N1), per variant. Usage:
#   bench/experiments/hit_path_cg.sh redis://127.0.0.1:6401 "raw:100 full:100 near:1" [N1] [N2]
# It bundles the experiment first (bench/ dependencies must be installed).
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
url="$1"; variants="$2"; n1="${3:-2000}"; n2="${4:-22000}"
out="$here/../.out"
mkdir -p "$out"
"$here/../node_modules/.bin/esbuild" --bundle --platform=node --format=esm --log-level=warning \
  "$here/hit_path.ts" --outfile="$out/hit_path.mjs"
refs() {
  valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file=/dev/null \
    node ${NODE_FLAGS---single-threaded --random-seed=42} "$out/hit_path.mjs" "$url" "$1" "$2" "$3" >"$out/hit_path.log" 2>&1 || { cat "$out/hit_path.log" >&2; exit 1; }
  sed -n 's/.*I *refs: *//p' "$out/hit_path.log" | tr -d ,
}
for v in $variants; do
  name="${v%%:*}"; inflight="${v##*:}"
  a=$(refs "$name" "$inflight" "$n1"); b=$(refs "$name" "$inflight" "$n2")
  echo "$name $inflight in flight: $(( (b - a) / (n2 - n1) )) instructions/hit (I refs $a at $n1, $b at $n2)"
done
