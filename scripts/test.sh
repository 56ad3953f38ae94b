#!/usr/bin/env bash
# The test command README.md gives: installs what the tests need where it is
# missing (Debian packages: redis-server, redis-sentinel, chromium, nginx, caddy;
# envoyproxy/ratelimit, built from the bench module's pinned tool), then runs
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

# envoyproxy/ratelimit, the peer of envoyrls's parity test: the version the
# bench module pins as a tool (bench/go.mod), built from the Go module proxy
# (minutes the first time, cached after). Without it that test is skipped.
if [ -z "${ENVOY_RATELIMIT_BIN:-}" ]; then
  rl="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/tollgate/envoy-ratelimit"
  if (cd bench && go build -o "$rl" github.com/envoyproxy/ratelimit/src/service_cmd); then
    export ENVOY_RATELIMIT_BIN="$rl"
  else
    echo "test: envoyproxy/ratelimit did not build; envoyrls's parity test will be skipped" >&2
  fi
fi

if [ $# -eq 0 ]; then
  set -- ./...
fi
exec go test -race -count=1 "$@"
