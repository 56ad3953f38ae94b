#!/usr/bin/env bash
# login-attack.sh: examples/login-bruteforce.yaml driven as an attacker and
# as a user would, through a real `tollgate serve` (bench/loginattack):
# 200 wrong passwords from one address, then 50 addresses sharing one TLS
# stack (one JA4) with 4 each, then a user's 2 typos and a correct login
# from an address and a TLS stack of its own. Prints what reached the
# origin, the refusals and their Retry-After, and fails when the example's
# promises are broken (at most the limit per window through, then the
# 15-minute penalty; the user never refused).
#
#   scripts/login-attack.sh [memory|redis|both]     default: both
#
# redis runs a redis-server of its own on a free 127.0.0.1 port (no
# persistence), stopped on exit. TOLLGATE=path runs that binary instead of
# building this tree's. Needs: go (and redis-server for redis).
set -euo pipefail

STORES=${1:-both}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUN=$(mktemp -d /tmp/login-attack.XXXXXX)
PIDS=()

. "$ROOT/scripts/bench-lib.sh" # need_tools, stop_servers, build_tollgate

cleanup() {
	stop_servers
	rm -rf "$RUN"
}
trap cleanup EXIT

case $STORES in
memory | redis | both) ;;
*) echo "usage: $(basename "$0") [memory|redis|both]" >&2; exit 2 ;;
esac
need_tools login-attack go
build_tollgate "$RUN/tollgate"
(cd "$ROOT/bench" && go build -o "$RUN/loginattack" ./loginattack)

attack() { # extra flags
	"$RUN/loginattack" -tollgate "$RUN/tollgate" -example "$ROOT/examples/login-bruteforce.yaml" "$@"
}

if [ "$STORES" != redis ]; then
	echo "=== the memory store"
	attack
	echo
	echo "=== the memory store, the fasthttp data path (listen.http2: off)"
	attack -http2 off
fi
if [ "$STORES" != memory ]; then
	need_tools login-attack redis-server redis-cli
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 16391)
	redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$RUN" >"$RUN/redis.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
	echo
	echo "=== Redis (127.0.0.1:$port)"
	attack -redis "redis://127.0.0.1:$port"
	echo "keys left on Redis: $(redis-cli -p "$port" dbsize)"
fi
