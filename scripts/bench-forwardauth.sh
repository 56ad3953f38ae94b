#!/usr/bin/env bash
# bench-forwardauth.sh: what nginx pays per request to ask tollgate, against
# the floor of asking at all. Three nginx front ends on loopback, each
# proxying to the same origin (an nginx answering 200 "ok"), measured with
# wrk in interleaved rounds:
#
#   nginx-alone     examples/forwardauth/nginx.conf with its auth_request
#                   line deleted: no subrequest
#   fa-floor        the same snippet, auth_request to an auth service that
#                   answers 200 at once (an nginx `return 200 ""`): the cost of
#                   the subrequest itself, over the same keepalive upstream
#   fa-floor-nethttp  the same, auth_request to a bare net/http server
#                   answering 200 (bench/peers/stdproxy -ok): the floor of an
#                   auth service on Go's HTTP stack, the one forward-auth runs on
#   fa-tollgate     the same snippet, auth_request to `tollgate forward-auth`
#                   with one per-IP rule that never refuses
#
# Each front end is the shipped snippet as it is (keepalive 32 to the auth
# service and the origin, one worker), only its addresses changed. CPU per
# request counts the front nginx and its auth service (not the origin, the
# same for all); prints medians as a Markdown table.
#
#   scripts/bench-forwardauth.sh [ROUNDS] [SECONDS]     defaults: 3 rounds of 5 s
#
# TOLLGATE=path measures that tollgate binary instead of building this
# tree's; TOLLGATE_B=path adds fa-tollgate-b, a second build, in the same
# rounds. CONNS sets wrk's connections (32).
# Needs: go, wrk, nginx. Listens on 127.0.0.1:18481-18490; everything
# started is stopped on exit.
set -euo pipefail

ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${CONNS:-32}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
EDGE=$ROOT/scripts/nginx
SNIPPET=$ROOT/examples/forwardauth/nginx.conf
RUN=$(mktemp -d /tmp/bench-forwardauth.XXXXXX)
. "$ROOT/scripts/bench-lib.sh" # build_tollgate, cputicks, median
PIDS=()
declare -A PIDOF
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$RUN"
}
trap cleanup EXIT
for tool in wrk nginx go curl; do
	command -v $tool >/dev/null || { echo "bench-forwardauth: $tool is not installed" >&2; exit 1; }
done

ports_free $(seq 18481 18490)

# --- the origin (18481) and the floor's auth service (18482): nginx 200 -------
origin() { # name port [sed-extra]
	mkdir -p "$RUN/$1/tmp"
	sed -e "s|@RUN@|$RUN/$1|g" -e "s|18081|$2|" ${3:+-e "$3"} "$EDGE/nginx-origin.conf.in" >"$RUN/$1/nginx.conf"
	nginx -c "$RUN/$1/nginx.conf" -p "$RUN/$1/" -e "$RUN/$1/error.log" -g 'daemon off;' &
	PIDS+=($!)
	PIDOF[$2]=$!
}
origin origin 18481
# The floor answers with an empty body, as tollgate does: auth_request
# reads only the header of its subrequest, and an upstream connection
# whose response had a body is closed rather than kept alive.
origin authfloor 18482 's|return 200 "ok"|return 200 ""|'

# --- the net/http floor (18489): a bare Go server answering 200 ---------------
(cd "$ROOT/bench" && go build -o "$RUN/" ./peers/stdproxy)
"$RUN/stdproxy" -addr 127.0.0.1:18489 -ok &
PIDS+=($!)
PIDOF[18489]=$!

# --- tollgate forward-auth (18483; the second build on 18487) -----------------
build_tollgate "$RUN/tollgate"
cat >"$RUN/forwardauth.yaml" <<'YAML'
client_ip: {trusted_proxies: [127.0.0.1]}
rules: [{name: api, key: ip, match: {path_prefixes: [/api/]}, policies: [{algorithm: token_bucket, rate: 1000000/s, burst: 1000}]}]
YAML
"$RUN/tollgate" forward-auth -config "$RUN/forwardauth.yaml" -listen 127.0.0.1:18483 -log-level error &
PIDS+=($!)
PIDOF[18483]=$!
if [ -n "${TOLLGATE_B:-}" ]; then
	cp "$TOLLGATE_B" "$RUN/tollgate-b"
	"$RUN/tollgate-b" forward-auth -config "$RUN/forwardauth.yaml" -listen 127.0.0.1:18487 -log-level error &
	PIDS+=($!)
	PIDOF[18487]=$!
fi

# --- the front ends: the shipped snippet, addresses changed -------------------
front() { # name port auth-port [sed-extra]
	local d="$RUN/$1"
	mkdir -p "$d/tmp"
	sed -e "s|127.0.0.1:8080|127.0.0.1:$2|" -e "s|127.0.0.1:9000|127.0.0.1:$3|" \
		-e "s|127.0.0.1:8081|127.0.0.1:18481|" ${4:+-e "$4"} "$SNIPPET" >"$d/nginx.conf"
	nginx -c "$d/nginx.conf" -p "$d/" -e "$d/error.log" -g 'daemon off;' &
	PIDS+=($!)
	PIDOF[$2]=$!
}
front nginx-alone 18484 18482 '/auth_request \/_tollgate;/d'
front fa-floor 18485 18482
front fa-floor-nethttp 18490 18489
front fa-tollgate 18486 18483
[ -n "${PIDOF[18487]:-}" ] && front fa-tollgate-b 18488 18487

for port in "${!PIDOF[@]}"; do
	for _ in $(seq 100); do
		code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/x" || true)
		[ "$code" != 000 ] && break
		sleep 0.1
	done
done

# name front-port auth-port (0: none): measured in this order every round.
CONFIGS=("nginx-alone 18484 0" "fa-floor 18485 18482" "fa-floor-nethttp 18490 18489" "fa-tollgate 18486 18483")
[ -n "${PIDOF[18488]:-}" ] && CONFIGS+=("fa-tollgate-b 18488 18487")
for c in "${CONFIGS[@]}"; do
	set -- $c
	echo "# $1: $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$2/api/x")" >&2
	wrk -t2 -c"$CONNS" -d1s "http://127.0.0.1:$2/api/x" >/dev/null
done

HZ=$(getconf CLK_TCK)
ticks() { # front-port auth-port
	local t
	t=$(cputicks "${PIDOF[$1]}")
	[ "$2" = 0 ] || t=$((t + $(cputicks "${PIDOF[$2]}")))
	echo "$t"
}
to_us() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else if (v ~ /s$/) print n * 1000000; else print n }'; }
RES="$RUN/results"
: >"$RES"
for r in $(seq "$ROUNDS"); do
	for c in "${CONFIGS[@]}"; do
		set -- $c
		t0=$(ticks "$2" "$3")
		out=$(wrk -t2 -c"$CONNS" -d"${SECS}s" --latency "http://127.0.0.1:$2/api/x")
		t1=$(ticks "$2" "$3")
		rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
		n=$(awk '/requests in/ {print $1}' <<<"$out")
		p99=$(to_us "$(awk '$1=="99%" {print $2}' <<<"$out")")
		non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$out")
		cpu=$(awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$HZ" 'BEGIN {printf "%.1f", (b - a) / hz * 1e6 / n}')
		echo "$1 $r $rps $p99 ${non2xx:-0} $cpu" >>"$RES"
		echo "# round $r $1: $rps req/s, p99 $p99 µs, non-2xx ${non2xx:-0}, nginx + auth CPU $cpu µs/req" >&2
	done
done

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| configuration (wrk -c$CONNS, ${SECS} s) | req/s (median of $ROUNDS) | p99 µs | non-2xx | nginx + auth service CPU µs/req |"
echo "| --- | ---: | ---: | ---: | ---: |"
for c in "${CONFIGS[@]}"; do
	set -- $c
	printf '| %s | %.0f | %.0f | %s | %.1f |\n' "$1" \
		"$(awk -v n="$1" '$1==n {print $3}' "$RES" | median)" \
		"$(awk -v n="$1" '$1==n {print $4}' "$RES" | median)" \
		"$(awk -v n="$1" '$1==n {print $5}' "$RES" | median)" \
		"$(awk -v n="$1" '$1==n {print $6}' "$RES" | median)"
done
