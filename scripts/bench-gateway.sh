#!/usr/bin/env bash
# bench-gateway.sh: tollgate's gateway against nginx (and a plain net/http
# httputil.ReverseProxy) on loopback, all proxying to the same nginx origin,
# measured with wrk in interleaved rounds; prints medians as a Markdown table.
# Besides throughput and latency it records the CPU time the server process
# (with its children: nginx's workers) spent per request, which a shared,
# noisy machine disturbs much less than throughput.
#
#   scripts/bench-gateway.sh [ROUNDS] [SECONDS]     defaults: 3 rounds of 5 s
#
# TOLLGATE=path measures that tollgate binary instead of building this
# tree's; TOLLGATE_B=path adds a second build (tollgate-b-rule-allow and
# tollgate-b-rule-deny on 18085-18086), measured in the same rounds.
# ONLY="nginx-limit-deny tollgate-rule-deny" measures only the named
# configurations (all servers still start); CONNS sets wrk's connections.
# SYSCALLS=1 adds a pass that counts each server's system calls per
# request with perf's syscall tracepoints (needs perf and root).
# EVENTLOOP=1 adds a static 429 served from gnet's event loops, and two
# bare proxies on gnet's event loops (gnet-proxy, gnet-proxy-safe).
#
# Needs: go, wrk, nginx (Debian nginx-light). The baselines written in Go
# (net/http, fasthttp, gnet) are built from bench/peers. Everything listens
# on 127.0.0.1:18081-18099 and is stopped on exit. The nginx configurations
# come from the templates in scripts/nginx, or from $EDGE.
set -euo pipefail

ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${CONNS:-64}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
EDGE=${EDGE:-$ROOT/scripts/nginx}
[ -f "$EDGE/nginx-proxy.conf.in" ] || { echo "$(basename "$0"): no nginx templates in $EDGE" >&2; exit 1; }
RUN=$(mktemp -d /tmp/bench-gateway.XXXXXX)
PIDS=()
declare -A PIDOF # port -> process id of the server on it (nginx: the master)

. "$ROOT/scripts/bench-lib.sh" # need_tools, stop_servers, only_configs, start_origin, build_tollgate, start_tollgate, cputicks, median

cleanup() {
	stop_servers
	rm -rf "$RUN"
}
trap cleanup EXIT

need_tools bench-gateway wrk nginx go

# --- the origin: nginx answering 200 "ok" on :18081 -------------------------
start_origin 18081

# --- nginx as the proxy: plain, never refusing, refusing --------------------
nginx_proxy() { # name port zone req
	local d="$RUN/nginx-$1"
	mkdir -p "$d/tmp"
	sed -e "s|@RUN@|$d|g" -e "s|@WORKERS@|2|" -e "s|18080|$2|" \
		-e "s|@LIMIT_ZONE@|$3|" -e "s|@LIMIT_REQ@|$4|" \
		"$EDGE/nginx-proxy.conf.in" >"$d/nginx.conf"
	nginx -c "$d/nginx.conf" -p "$d/" -g 'daemon off;' &
	PIDS+=($!)
	PIDOF[$2]=$!
}
nginx_proxy plain 18082 "" ""
nginx_proxy allow 18083 'limit_req_zone $binary_remote_addr zone=z:10m rate=1000000r/s;' 'limit_req zone=z burst=1000 nodelay;'
nginx_proxy deny 18084 'limit_req_zone $binary_remote_addr zone=z:10m rate=100r/s;' 'limit_req zone=z;'

# --- tollgate: no rule, a rule that never refuses, a rule that always does ---
build_tollgate "$RUN/tollgate"
tollgate() { start_tollgate "$1" "$2" 18081 "" "$3"; } # name port rules-yaml
ALLOW='rules: [{name: per-ip, key: ip, policies: [{algorithm: token_bucket, rate: 1000000/s, burst: 1000}]}]'
DENY='rules: [{name: per-ip, key: ip, policies: [{algorithm: token_bucket, rate: 1/h, burst: 1}]}]'
tollgate norule 18090 ""
tollgate allow 18091 "$ALLOW"
tollgate deny 18092 "$DENY"
if [ -n "${TOLLGATE_B:-}" ]; then
	cp "$TOLLGATE_B" "$RUN/tollgate-b"
	TGBIN=$RUN/tollgate-b tollgate b-allow 18085 "$ALLOW"
	TGBIN=$RUN/tollgate-b tollgate b-deny 18086 "$DENY"
fi

# --- baselines: built from the bench module (bench/peers) ---------------------
# stdproxy: net/http's httputil.ReverseProxy, and a net/http 429 responder.
# fastpeer: a bare fasthttp HostClient proxy and a fasthttp handler answering
# the same 429: the stack's own cost, without tollgate's work.
mkdir -p "$RUN/peers"
(cd "$ROOT/bench" && go build -o "$RUN/peers/" ./peers/stdproxy ./peers/fastpeer)
"$RUN/peers/stdproxy" -addr 127.0.0.1:18095 &
PIDS+=($!)
PIDOF[18095]=$!
"$RUN/peers/stdproxy" -addr 127.0.0.1:18096 -deny &
PIDS+=($!)
PIDOF[18096]=$!
"$RUN/peers/fastpeer" -addr 127.0.0.1:18097 &
PIDS+=($!)
PIDOF[18097]=$!
"$RUN/peers/fastpeer" -addr 127.0.0.1:18098 -deny &
PIDS+=($!)
PIDOF[18098]=$!

# --- optional baseline: the same 429 from an event loop (gnet) -----------
# EVENTLOOP=1: a Go server that, like nginx, reads a socket only when epoll
# reports it ready (one read per request instead of fasthttp's two),
# answering the same static 429; and two bare proxies on event loops.
# Sources: bench/peers/gnetpeer (github.com/panjf2000/gnet/v2); its log goes
# to standard error.
if [ "${EVENTLOOP:-}" = 1 ]; then
	(cd "$ROOT/bench" && go build -o "$RUN/peers/" ./peers/gnetpeer)
	"$RUN/peers/gnetpeer" -addr 127.0.0.1:18099 </dev/null >&2 &
	PIDS+=($!)
	PIDOF[18099]=$!
	"$RUN/peers/gnetpeer" -addr 127.0.0.1:18093 -proxy </dev/null >&2 &
	PIDS+=($!)
	PIDOF[18093]=$!
	"$RUN/peers/gnetpeer" -addr 127.0.0.1:18094 -proxy -safe </dev/null >&2 &
	PIDS+=($!)
	PIDOF[18094]=$!
fi

HZ=$(getconf CLK_TCK)

# Wait for every port.
for port in "${!PIDOF[@]}"; do
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$port/" && break
		sleep 0.1
	done
done

# name port: the configurations, measured in this order in every round.
CONFIGS=(
	"origin-direct 18081"
	"nginx-plain 18082"
	"nginx-limit-allow 18083"
	"nginx-limit-deny 18084"
	"tollgate-norule 18090"
	"tollgate-rule-allow 18091"
	"tollgate-rule-deny 18092"
	"nethttp-reverseproxy 18095"
	"nethttp-429 18096"
)
if [ -n "${PIDOF[18085]:-}" ]; then
	CONFIGS+=("tollgate-b-rule-allow 18085" "tollgate-b-rule-deny 18086")
fi
if [ -n "${PIDOF[18097]:-}" ]; then
	CONFIGS+=("fasthttp-hostclient-proxy 18097" "fasthttp-429 18098")
fi
if [ -n "${PIDOF[18099]:-}" ]; then
	CONFIGS+=("gnet-429 18099" "gnet-proxy 18093" "gnet-proxy-safe 18094")
fi

only_configs

# Check the refusing configurations refuse and the others do not.
for c in "${CONFIGS[@]}"; do
	set -- $c
	code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$2/"; curl -s -o /dev/null -w ' %{http_code}' "http://127.0.0.1:$2/")
	echo "# $1: $code" >&2
done

# Warm up each once.
for c in "${CONFIGS[@]}"; do
	set -- $c
	wrk -t2 -c"$CONNS" -d1s "http://127.0.0.1:$2/" >/dev/null
done

RES="$RUN/results"
: >"$RES"
for r in $(seq "$ROUNDS"); do
	for c in "${CONFIGS[@]}"; do
		set -- $c
		t0=$(cputicks "${PIDOF[$2]}")
		out=$(wrk -t2 -c"$CONNS" -d"${SECS}s" --latency "http://127.0.0.1:$2/")
		t1=$(cputicks "${PIDOF[$2]}")
		rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
		nreq=$(awk '/requests in/ {print $1}' <<<"$out")
		cpu=$(awk -v a="$t0" -v b="$t1" -v n="$nreq" -v hz="$HZ" 'BEGIN {printf "%.1f", (b - a) / hz * 1e6 / n}')
		p50=$(awk '$1=="50%" {print $2}' <<<"$out")
		p99=$(awk '$1=="99%" {print $2}' <<<"$out")
		non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$out")
		echo "$1 $r $rps $p50 $p99 ${non2xx:-0} $cpu" >>"$RES"
		echo "# round $r $1: $rps req/s, p50 $p50, p99 $p99, non-2xx ${non2xx:-0}, server CPU $cpu µs/req" >&2
	done
done

# Medians (ROUNDS values each) as a Markdown table.
to_us() { # wrk latency (123.45us, 1.23ms, 1.2s) to microseconds
	awk -v v="$1" 'BEGIN {
		n = v + 0
		if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else if (v ~ /s$/) print n * 1000000; else print n
	}'
}
echo
echo "| configuration | req/s (median of $ROUNDS) | p50 µs | p99 µs | server CPU µs/req | all req/s |"
echo "| --- | ---: | ---: | ---: | ---: | --- |"
for c in "${CONFIGS[@]}"; do
	set -- $c
	rps=$(awk -v n="$1" '$1 == n {print $3}' "$RES" | median)
	p50=$(awk -v n="$1" '$1 == n {print $4}' "$RES" | while read -r v; do to_us "$v"; done | median)
	p99=$(awk -v n="$1" '$1 == n {print $5}' "$RES" | while read -r v; do to_us "$v"; done | median)
	cpu=$(awk -v n="$1" '$1 == n {print $7}' "$RES" | median)
	all=$(awk -v n="$1" '$1 == n {printf "%s%.0f", sep, $3; sep = ", "}' "$RES")
	printf "| %s | %.0f | %.0f | %.0f | %.1f | %s |\n" "$1" "$rps" "$p50" "$p99" "$cpu" "$all"
done

# Paired ratios: each round's A/B from the same round (measured seconds
# apart), median over the rounds; throughput, and CPU efficiency (B's CPU
# per request over A's: above 1 means A spends less).
echo
echo "| A vs B (median of per-round ratios) | req/s A/B | CPU efficiency A vs B |"
echo "| --- | ---: | ---: |"
for pair in tollgate-rule-allow/tollgate-norule tollgate-rule-allow/nginx-limit-allow \
	tollgate-norule/nginx-plain tollgate-rule-deny/nginx-limit-deny \
	tollgate-norule/nethttp-reverseproxy tollgate-rule-deny/nethttp-429 \
	tollgate-norule/fasthttp-hostclient-proxy tollgate-rule-deny/fasthttp-429 \
	fasthttp-hostclient-proxy/nginx-plain fasthttp-429/nginx-limit-deny \
	gnet-429/nginx-limit-deny gnet-429/fasthttp-429 \
	gnet-proxy/nginx-plain gnet-proxy-safe/nginx-plain \
	gnet-proxy/fasthttp-hostclient-proxy gnet-proxy-safe/fasthttp-hostclient-proxy; do
	a=${pair%/*} b=${pair#*/}
	grep -q "^$b " "$RES" && grep -q "^$a " "$RES" || continue
	rr=$(awk -v a="$a" -v b="$b" '$1 == a {x[$2] = $3} $1 == b {y[$2] = $3} END {for (r in x) if (y[r] > 0) print x[r] / y[r]}' "$RES" | median)
	cr=$(awk -v a="$a" -v b="$b" '$1 == a {x[$2] = $7} $1 == b {y[$2] = $7} END {for (r in x) if (x[r] > 0) print y[r] / x[r]}' "$RES" | median)
	printf "| %s vs %s | %.2f | %.2f |\n" "$a" "$b" "$rr" "$cr"
done

# System calls per request: one 3 s wrk run per configuration under
# perf stat's syscall tracepoints (which slow the server down: only the
# counts per request are meant here, not the throughput).
if [ "${SYSCALLS:-}" = 1 ]; then
	command -v perf >/dev/null || { echo "bench-gateway: SYSCALLS=1 needs perf" >&2; exit 1; }
	events=raw_syscalls:sys_enter
	for e in read recvfrom write writev epoll_wait epoll_pwait futex nanosleep; do
		events+=",syscalls:sys_enter_$e"
	done
	echo
	echo "| configuration | all | read+recvfrom | write+writev | epoll | futex+nanosleep |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: |"
	for c in "${CONFIGS[@]}"; do
		set -- $c
		pids=$(echo "${PIDOF[$2]}" $(pgrep -P "${PIDOF[$2]}") | tr ' ' ',')
		perf stat -x, -e "$events" -p "$pids" -o "$RUN/perf.$2" -- sleep 3.3 &
		perfpid=$!
		sleep 0.1
		nreq=$(wrk -t2 -c"$CONNS" -d3s "http://127.0.0.1:$2/" | awk '/requests in/ {print $1}')
		wait "$perfpid"
		awk -F, -v n="$nreq" -v name="$1" '/^[0-9]/ {
			split($3, a, "sys_enter_"); k = a[2]; if ($3 ~ /^raw_/) k = "all"
			v[k] = $1
		} END {
			printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", name, v["all"] / n,
				(v["read"] + v["recvfrom"]) / n, (v["write"] + v["writev"]) / n,
				(v["epoll_wait"] + v["epoll_pwait"]) / n, (v["futex"] + v["nanosleep"]) / n
		}' "$RUN/perf.$2"
	done
fi
