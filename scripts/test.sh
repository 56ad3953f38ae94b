#!/usr/bin/env bash
# The test command README.md gives: installs what the tests need where it is
# missing (Debian packages: redis-server, redis-sentinel, chromium, nginx, caddy), then runs
# the whole suite with the race detector. Extra arguments go to `go test`
# (for example `scripts/test.sh -run TestX ./gateway/`); with none it runs
# `./...`.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-sentinel >/dev/null 2>&1 || need+=(redis-sentinel)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v caddy >/dev/null 2>&1 || need+=(caddy)
if [ ${#need[@]} -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      echo "test: missing ${need[*]}; install them (Debian: apt-get install ${need[*]}) and run again" >&2
      exit 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "test: missing ${need[*]} and no apt-get here; install them with your package manager and run again" >&2
    exit 1
  fi
  echo "test: installing ${need[*]} (Debian packages)"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ $# -eq 0 ]; then
  set -- ./...
fi
exec go test -race -count=1 "$@"
