#!/usr/bin/env bash
# The servers CI tests against besides the distribution's redis-server: Redis
# 8.0 and Valkey 8.1, as Debian 13 (trixie) packages them. Their binaries need
# trixie's glibc, so they run with trixie's own loader and libraries, unpacked
# beside them (`ld-linux-x86-64.so.2 --library-path <libs> <binary>`); nothing
# is installed on the system and trixie never enters its apt sources (a later
# `apt-get install` could otherwise pull trixie's libc into the system).
#
# Exact versions and the sha256 of every .deb are pinned in servers.pins; a
# download that does not match fails. Fetched once, then cached under
# ${HERDLESS_SERVERS_DIR:-~/.cache/herdless-servers}/<digest of servers.pins>.
# Needs apt-get and dpkg-deb (Debian, Ubuntu) on x86_64 Linux; elsewhere set
# REDIS_SERVER to a server you have.
#
# Usage:
#   servers.sh install          fetch and unpack (once), print the folder
#   servers.sh path NAME        the server wrapper for NAME (redis-8.0, valkey-8.1), installing first
#   servers.sh repin            pin what trixie ships today (rewrites servers.pins; review the diff)
#
# Each wrapper (bin/redis-8.0/redis-server, bin/redis-8.0/redis-cli,
# bin/valkey-8.1/valkey-server, bin/valkey-8.1/valkey-cli) runs like the
# binary itself, as REDIS_SERVER=<wrapper>; it execs the loader, so its pid is
# the server's own (tests signal it).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
pins="$here/servers.pins"
cache=${HERDLESS_SERVERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/herdless-servers}
mirror=${HERDLESS_DEBIAN_MIRROR:-http://deb.debian.org}
libdir=usr/lib/x86_64-linux-gnu
work=""

# NAME PACKAGE BINARY... : what each wrapper folder holds.
servers=(
  "redis-8.0 redis-server redis-cli"
  "valkey-8.1 valkey-server valkey-cli"
)

die() {
  echo "servers.sh: $*" >&2
  exit 1
}

# apt with a configuration of its own: trixie's lists in a private folder, no
# system sources, no system dpkg status (nothing counts as installed).
private_apt() {
  local state=$1
  shift
  mkdir -p "$state/lists/partial" "$state/archives/partial"
  cat >"$state/sources.list" <<EOF
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror/debian trixie main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror/debian-security trixie-security main
EOF
  "$@" \
    -o Dir::Etc::SourceList="$state/sources.list" \
    -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::Etc::PreferencesParts=/dev/null \
    -o Dir::State::Lists="$state/lists" \
    -o Dir::State::status=/dev/null \
    -o Dir::Cache="$state" \
    -o Dir::Cache::archives="$state/archives" \
    -o APT::Architecture=amd64 \
    -o APT::Architectures::=amd64 \
    -o APT::Sandbox::User="$(id -un)" \
    -q
}

need_tools() {
  [ "$(uname -sm)" = "Linux x86_64" ] || die "needs x86_64 Linux (got $(uname -sm)); set REDIS_SERVER to a server you have"
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
    die "needs apt-get and dpkg-deb (Debian or Ubuntu); set REDIS_SERVER to a server you have"
  [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] ||
    die "needs Debian's archive keys (apt-get install debian-archive-keyring) to check trixie's signatures"
}

# The pinned packages as "package=version" words, and as "sha256  file" lines for sha256sum -c.
pinned() { grep -v '^#' "$pins" | awk 'NF == 3 { print $1 "=" $2 }'; }
checksums() {
  grep -v '^#' "$pins" | awk 'NF == 3 { v = $2; gsub(":", "%3a", v); print $3 "  " $1 "_" v "_amd64.deb" }'
}

write_wrapper() {
  local path=$1 binary=$2
  cat >"$path" <<EOF
#!/bin/sh
# $binary from Debian 13 (trixie), run with trixie's loader and libraries (see test/support/servers.sh).
root=\$(cd "\$(dirname "\$0")/../../root" && pwd)
exec "\$root/$libdir/ld-linux-x86-64.so.2" --library-path "\$root/$libdir" "\$root/usr/bin/$binary" "\$@"
EOF
  chmod +x "$path"
}

install() {
  local digest target
  digest=$(sha256sum "$pins" | cut -c1-16)
  target="$cache/$digest"
  if [ -f "$target/complete" ]; then
    echo "$target"
    return
  fi
  need_tools
  mkdir -p "$cache"
  work=$(mktemp -d "$cache/.fetch.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  echo "servers.sh: fetching Redis 8.0 and Valkey 8.1 from Debian 13 (once, into $target)" >&2
  private_apt "$work/apt" apt-get update >&2
  mkdir -p "$work/debs"
  # shellcheck disable=SC2046 # one word per pinned package
  if ! (cd "$work/debs" && private_apt "$work/apt" apt-get download $(pinned) >&2); then
    die "a pinned version is no longer in trixie (Debian replaces a package on each point or security release): run 'test/support/servers.sh repin', review the new versions, commit servers.pins"
  fi
  (cd "$work/debs" && checksums | sha256sum --quiet -c -) ||
    die "a downloaded .deb does not match its sha256 in $pins"
  mkdir -p "$work/out/root"
  for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$work/out/root"; done
  for server in "${servers[@]}"; do
    read -r name rest <<<"$server"
    mkdir -p "$work/out/bin/$name"
    for binary in $rest; do write_wrapper "$work/out/bin/$name/$binary" "$binary"; done
    "$work/out/bin/$name/${rest%% *}" --version >&2 || die "$name does not start on this machine"
  done
  cp "$pins" "$work/out/servers.pins"
  touch "$work/out/complete"
  # Two runs fetching at once: the first rename wins, the other's copy is dropped.
  mv -T "$work/out" "$target" 2>/dev/null || [ -f "$target/complete" ] || die "cannot write $target"
  echo "$target"
}

repin() {
  need_tools
  local packages
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  packages=$(grep -v '^#' "$pins" | awk 'NF == 3 { print $1 }')
  private_apt "$work/apt" apt-get update >&2
  mkdir -p "$work/debs"
  # shellcheck disable=SC2086 # one word per package
  (cd "$work/debs" && private_apt "$work/apt" apt-get download $packages >&2)
  {
    grep '^#' "$pins"
    for package in $packages; do
      local deb version
      deb=$(ls "$work/debs/${package}_"*.deb)
      version=$(dpkg-deb -f "$deb" Version)
      echo "$package $version $(sha256sum "$deb" | cut -d' ' -f1)"
    done
  } >"$work/pins"
  mv "$work/pins" "$pins"
  echo "servers.sh: $pins rewritten; review 'git diff' before committing" >&2
}

case ${1:-} in
install) install ;;
path)
  for server in "${servers[@]}"; do
    read -r name binary _ <<<"$server"
    if [ "$name" = "${2:-}" ]; then
      echo "$(install)/bin/$name/$binary"
      exit 0
    fi
  done
  die "unknown server '${2:-}' (known: redis-8.0, valkey-8.1)"
  ;;
repin) repin ;;
*) die "usage: servers.sh install | path redis-8.0|valkey-8.1 | repin" ;;
esac
