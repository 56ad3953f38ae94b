#!/bin/sh
# Records envoyproxy/ratelimit's answers for the parity suite
# (cmd/tollgate/testdata/envoy-parity/golden, check.json) from the
# version bench/go.mod pins. Run it again when that version changes, and
# commit what it writes. Needs redis-server.
set -eu
cd "$(dirname "$0")/.."
cache="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/tollgate"
mkdir -p "$cache"
(cd bench && go build -o "$cache/envoy-ratelimit" github.com/envoyproxy/ratelimit/src/service_cmd &&
	go build -o "$cache/envoy-ratelimit-check" github.com/envoyproxy/ratelimit/src/config_check_cmd)
cd cmd/tollgate
TOLLGATE_PARITY_RECORD=1 ENVOY_RATELIMIT_BIN="$cache/envoy-ratelimit" ENVOY_RATELIMIT_CHECK_BIN="$cache/envoy-ratelimit-check" \
	go test -count=1 -timeout 30m -run '^TestEnvoyParityRecord$' -v . | grep -E '^(---|ok|FAIL|\s+envoy_parity)' || true
git status --short testdata/envoy-parity
