#!/usr/bin/env bash
# ab-builds.sh: the same gateway configuration served by several commits of
# tollgate, side by side with nginx, measured with wrk in interleaved
# rounds: the A/B comparisons that weigh one change (docs/benchmarks-history.md
# has those made so far).
#
#   scripts/ab-builds.sh [-deny|-allow] ROUNDS SECONDS REV...
#
# -deny (the default) measures the refusal path: a per-IP rule of 1/h,
# burst 1, against nginx limit_req refusing; -allow the proxy path with a
# rule that never refuses, against nginx limit_req never refusing. Each
# REV (a commit, tag or branch) is built in a temporary worktree. Prints
# each round, then the medians of req/s and of server CPU per request.
#
# Needs: go, git, wrk, nginx. Listens on 127.0.0.1:18181-18189 and
# 18281-18289; everything started is stopped on exit.
set -euo pipefail

mode=deny
case "${1:-}" in -deny | -allow) mode=${1#-}; shift ;; esac
[ $# -ge 3 ] || { sed -n '2,16p' "$0" >&2; exit 2; }
ROUNDS=$1 SECS=$2
shift 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
EDGE=${EDGE:-$ROOT/scripts/nginx}
[ -f "$EDGE/nginx-proxy.conf.in" ] || { echo "$(basename "$0"): no nginx templates in $EDGE" >&2; exit 1; }
RUN=$(mktemp -d /tmp/ab-builds.XXXXXX)
PIDS=()
. "$ROOT/scripts/bench-lib.sh" # need_tools, stop_servers, cputicks, median
cleanup() {
	stop_servers
	for w in "$RUN"/wt-*; do [ -d "$w" ] && git -C "$ROOT" worktree remove --force "$w" 2>/dev/null || true; done
	rm -rf "$RUN"
}
trap cleanup EXIT
need_tools ab-builds wrk nginx go git

# The origin, and nginx as the peer.
mkdir -p "$RUN/origin/tmp" "$RUN/nginx/tmp"
sed "s|@RUN@|$RUN/origin|g; s|18081|18281|" "$EDGE/nginx-origin.conf.in" >"$RUN/origin/nginx.conf"
nginx -c "$RUN/origin/nginx.conf" -p "$RUN/origin/" -g 'daemon off;' &
PIDS+=($!)
if [ "$mode" = deny ]; then
	zone='limit_req_zone $binary_remote_addr zone=z:10m rate=100r/s;' req='limit_req zone=z;'
	policy='{rate: 1/h, burst: 1}'
else
	zone='limit_req_zone $binary_remote_addr zone=z:10m rate=1000000r/s;' req='limit_req zone=z burst=1000 nodelay;'
	policy='{rate: 1000000/s, burst: 1000}'
fi
sed -e "s|@RUN@|$RUN/nginx|g" -e "s|@WORKERS@|2|" -e "s|18080|18181|" -e "s|18081|18281|" \
	-e "s|@LIMIT_ZONE@|$zone|" -e "s|@LIMIT_REQ@|$req|" "$EDGE/nginx-proxy.conf.in" >"$RUN/nginx/nginx.conf"
nginx -c "$RUN/nginx/nginx.conf" -p "$RUN/nginx/" -g 'daemon off;' &
PIDS+=($!)
NAMES=(nginx) PORTS=(18181) SERVERS=($!)

# Each build, on its own port.
port=18182
for rev in "$@"; do
	w="$RUN/wt-$port"
	git -C "$ROOT" worktree add -q --detach "$w" "$rev"
	(cd "$w" && go build -o "$RUN/tollgate-$port" ./cmd/tollgate)
	cat >"$RUN/tollgate-$port.yaml" <<YAML
listen: {addr: "127.0.0.1:$port"}
admin: {addr: "off"}
reload: {watch: false}
upstream: {max_conns: 512}
routes: [{path: /, upstream: "http://127.0.0.1:18281"}]
rules: [{name: per-ip, key: ip, policies: [$policy]}]
YAML
	"$RUN/tollgate-$port" serve -config "$RUN/tollgate-$port.yaml" </dev/null >"$RUN/tollgate-$port.log" 2>&1 &
	PIDS+=($!)
	NAMES+=("$rev") PORTS+=($port) SERVERS+=($!)
	port=$((port + 1))
done
for p in "${PORTS[@]}"; do
	for _ in $(seq 100); do curl -m 2 -s -o /dev/null "http://127.0.0.1:$p/" && break; sleep 0.1; done
done

HZ=$(getconf CLK_TCK)
for p in "${PORTS[@]}"; do wrk -t2 -c64 -d1s "http://127.0.0.1:$p/" >/dev/null; done
RES="$RUN/results"
: >"$RES"
for r in $(seq "$ROUNDS"); do
	for i in "${!PORTS[@]}"; do
		t0=$(cputicks "${SERVERS[$i]}")
		out=$(wrk -t2 -c64 -d"${SECS}s" "http://127.0.0.1:${PORTS[$i]}/")
		t1=$(cputicks "${SERVERS[$i]}")
		rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
		n=$(awk '/requests in/ {print $1}' <<<"$out")
		cpu=$(awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$HZ" 'BEGIN {printf "%.2f", (b - a) / hz * 1e6 / n}')
		echo "$i $rps $cpu" >>"$RES"
		echo "# round $r ${NAMES[$i]}: $rps req/s, $cpu µs CPU/req" >&2
	done
done
echo "| server ($mode) | req/s (median of $ROUNDS) | server CPU µs/req |"
echo "| --- | ---: | ---: |"
for i in "${!PORTS[@]}"; do
	printf "| %s | %.0f | %.2f |\n" "${NAMES[$i]}" \
		"$(awk -v i="$i" '$1 == i {print $2}' "$RES" | median)" "$(awk -v i="$i" '$1 == i {print $3}' "$RES" | median)"
done
