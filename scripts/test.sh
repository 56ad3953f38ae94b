#!/usr/bin/env bash
# The test command README.md gives: installs what the tests need where it is
# missing (Debian packages: redis-server, redis-sentinel, chromium, nginx, caddy;
# envoyproxy/ratelimit, built from the bench module's pinned tool), then runs
# the whole suite with the race detector. Extra arguments go to `go test`
# (for example `scripts/test.sh -run TestX ./gateway/`); with none it runs
# `./...`.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/install-lib.sh # need_debian, envoy_ratelimit
need_debian redis-server:redis-server redis-sentinel:redis-sentinel chromium:chromium nginx:nginx caddy:caddy

# envoyproxy/ratelimit, the peer of envoyrls's parity test: the version the
# bench module pins as a tool (bench/go.mod), built from the Go module proxy
# (minutes the first time, cached after). Without it that test is skipped.
if ! envoy_ratelimit; then
  echo "test: envoyproxy/ratelimit did not build; envoyrls's parity test will be skipped" >&2
fi

if [ $# -eq 0 ]; then
  set -- ./...
fi
exec go test -race -count=1 "$@"
