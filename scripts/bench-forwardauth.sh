#!/usr/bin/env bash
# bench-forwardauth.sh: nginx + auth_request + `tollgate forward-auth`
# against its floors, the same nginx asking an auth service that allows
# everything at once, measured with wrk in interleaved rounds; prints
# medians as a Markdown table. Every front nginx runs the shipped
# examples/forwardauth/nginx.conf (keepalive upstream, HTTP/1.1, empty
# Connection), only its addresses changed, in front of one origin (nginx
# answering 200 "ok"). The configurations:
#
#   nginx-alone      the snippet with its auth_request line deleted
#   floor-internal   auth_request to its internal location answering
#                    `return 200;` itself: the subrequest, no second process
#   floor-nginx      auth_request to a second nginx answering 200: the
#                    cheapest auth service that is another process
#   floor-nethttp    auth_request to a bare net/http server answering 200
#                    (bench/peers/stdproxy -ok): Go's floor
#   tollgate         auth_request to tollgate forward-auth, one per-IP
#                    token bucket that never refuses (every request
#                    decided and allowed)
#
# CPU per request is the primary figure: the front nginx's (with its
# workers) plus the auth service's, from /proc, over wrk's requests (the
# origin, the same for all, is left out).
#
#   scripts/bench-forwardauth.sh [ROUNDS] [SECONDS]    defaults: 5 rounds of 5 s
#
# ONLY="floor-nginx tollgate" measures only those; CONNS sets wrk's
# connections (32). Needs go, wrk, nginx; listens on 127.0.0.1:BASE+1 to
# BASE+24 (BASE=27400 unless set), all stopped on exit.
set -euo pipefail

ROUNDS=${1:-5}
SECS=${2:-5}
CONNS=${CONNS:-32}
B=${BASE:-27400}
O=$((B + 1)) T=$((B + 10)) AN=$((B + 11)) AG=$((B + 12)) # origin, tollgate, the floors
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUN=$(mktemp -d /tmp/bench-forwardauth.XXXXXX)
PIDS=()
declare -A PIDOF # port -> process id of the server on it (nginx: the master)

. "$ROOT/scripts/bench-lib.sh" # need_tools, stop_servers, only_configs, cputicks, median

cleanup() {
	stop_servers
	rm -rf "$RUN"
}
trap cleanup EXIT

need_tools bench-forwardauth wrk nginx go curl

# nginx_run NAME PORT CONF: starts nginx with CONF (a file) under $RUN/NAME.
nginx_run() {
	local d="$RUN/$1"
	mkdir -p "$d/tmp"
	cp "$3" "$d/nginx.conf"
	nginx -p "$d/" -c "$d/nginx.conf" -e stderr -g 'daemon off;' &
	PIDS+=($!)
	PIDOF[$2]=$!
}

# The origin, and the second nginx answering 200 (floor-nginx's service).
sed "s|@RUN@|$RUN/origin|g; s|127.0.0.1:18081|127.0.0.1:$O|" "$ROOT/scripts/nginx/nginx-origin.conf.in" >"$RUN/origin.conf"
nginx_run origin $O "$RUN/origin.conf"
sed "s|@RUN@|$RUN/authnginx|g; s|127.0.0.1:18081|127.0.0.1:$AN|; s|return 200 \"ok\"|return 200|" \
	"$ROOT/scripts/nginx/nginx-origin.conf.in" >"$RUN/authnginx.conf"
nginx_run authnginx $AN "$RUN/authnginx.conf"

# The front nginx: the shipped snippet with its addresses changed.
SNIPPET=$ROOT/examples/forwardauth/nginx.conf
front() { # name port auth-port [extra sed expression]
	sed -e "s/127.0.0.1:8080/127.0.0.1:$2/; s/127.0.0.1:9000/127.0.0.1:$3/; s/127.0.0.1:8081/127.0.0.1:$O/" \
		${4:+-e "$4"} "$SNIPPET" >"$RUN/front-$1.conf"
	nginx_run "front-$1" "$2" "$RUN/front-$1.conf"
}
front nginx-alone $((B + 20)) $T '/auth_request \/_tollgate;/d'
front floor-internal $((B + 21)) $T 's|proxy_pass http://tollgate/auth/nginx;|return 200;|'
front floor-nginx $((B + 22)) $AN
front floor-nethttp $((B + 23)) $AG
front tollgate $((B + 24)) $T

# The auth services written in Go.
(cd "$ROOT" && go build -o "$RUN/tollgate" ./cmd/tollgate)
(cd "$ROOT/bench" && go build -o "$RUN/" ./peers/stdproxy)
"$RUN/stdproxy" -addr 127.0.0.1:$AG -ok &
PIDS+=($!)
PIDOF[$AG]=$!
cat >"$RUN/tollgate.yaml" <<'YAML'
client_ip: {trusted_proxies: [127.0.0.1]}
rules: [{name: per-ip, key: ip, match: {path_prefixes: [/api/]}, policies: [{algorithm: token_bucket, rate: 1000000/s, burst: 1000}]}]
YAML
"$RUN/tollgate" forward-auth -config "$RUN/tollgate.yaml" -listen 127.0.0.1:$T -log-level error &
PIDS+=($!)
PIDOF[$T]=$!

# name front-port auth-port: the configurations, measured in this order
# in every round (auth-port "-": no auth service).
CONFIGS=(
	"nginx-alone $((B + 20)) -"
	"floor-internal $((B + 21)) -"
	"floor-nginx $((B + 22)) $AN"
	"floor-nethttp $((B + 23)) $AG"
	"tollgate $((B + 24)) $T"
)
only_configs

for port in "${!PIDOF[@]}"; do
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$port/" && break
		sleep 0.1
	done
	curl -s -o /dev/null "http://127.0.0.1:$port/" || { echo "bench-forwardauth: nothing answers on 127.0.0.1:$port" >&2; exit 1; }
done

# Each configuration must allow (200 "ok" from the origin, the rate
# fields when tollgate decided) before it is measured.
for c in "${CONFIGS[@]}"; do
	set -- $c
	out=$(curl -s -D - "http://127.0.0.1:$2/api/x")
	grep -q '^HTTP/1.1 200' <<<"$out" || { echo "bench-forwardauth: $1 does not allow: $out" >&2; exit 1; }
	if [ "$1" = tollgate ] && ! grep -qi '^ratelimit:' <<<"$out"; then
		echo "bench-forwardauth: tollgate did not decide (no RateLimit field): $out" >&2
		exit 1
	fi
	wrk -t2 -c"$CONNS" -d1s "http://127.0.0.1:$2/api/x" >/dev/null # warm up
done

HZ=$(getconf CLK_TCK)
ticks() { # front-port auth-port: CPU ticks of the front nginx and the auth service
	local t
	t=$(cputicks "${PIDOF[$1]}")
	[ "$2" = - ] || t=$((t + $(cputicks "${PIDOF[$2]}")))
	echo "$t"
}

RES="$RUN/results"
: >"$RES"
echo "# load before: $(uptime)" >&2
for r in $(seq "$ROUNDS"); do
	for c in "${CONFIGS[@]}"; do
		set -- $c
		t0=$(ticks "$2" "$3")
		out=$(wrk -t2 -c"$CONNS" -d"${SECS}s" --latency "http://127.0.0.1:$2/api/x")
		t1=$(ticks "$2" "$3")
		rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
		nreq=$(awk '/requests in/ {print $1}' <<<"$out")
		cpu=$(awk -v a="$t0" -v b="$t1" -v n="$nreq" -v hz="$HZ" 'BEGIN {printf "%.1f", (b - a) / hz * 1e6 / n}')
		p99=$(awk '$1 == "99%" {v = $2; n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) ; else if (v ~ /s$/) n *= 1000; printf "%.2f", n}' <<<"$out") # ms
		bad=$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$out")
		echo "$1 $r $rps $cpu $p99 ${bad:-0}" >>"$RES"
		echo "# round $r $1: $rps req/s, nginx + auth CPU $cpu µs/req ${p99} ms, non-2xx ${bad:-0}" >&2
	done
done
LOAD=$(uptime | sed 's/.*load average: //')

# Medians, and each configuration's per-round ratio to tollgate's (median
# over the rounds): throughput tollgate/config, CPU config/tollgate (above
# 1: tollgate spends less).
echo
echo "forward-auth, $ROUNDS rounds of ${SECS}s, wrk -t2 -c$CONNS, load average at the end $LOAD"
echo
echo "| configuration | req/s (median) | nginx + auth CPU µs/req | p99 ms | tollgate's req/s ÷ this | this CPU ÷ tollgate's | all req/s |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
for c in "${CONFIGS[@]}"; do
	set -- $c
	rps=$(awk -v n="$1" '$1 == n {print $3}' "$RES" | median)
	cpu=$(awk -v n="$1" '$1 == n {print $4}' "$RES" | median)
	p99=$(awk -v n="$1" '$1 == n {print $5}' "$RES" | median)
	all=$(awk -v n="$1" '$1 == n {printf "%s%.0f", sep, $3; sep = ", "}' "$RES")
	ratio=$(awk -v n="$1" '$1 == "tollgate" {t[$2] = $3} $1 == n {c[$2] = $3} END {for (r in c) if (r in t && c[r] > 0) print t[r] / c[r]}' "$RES" | median)
	cratio=$(awk -v n="$1" '$1 == "tollgate" {t[$2] = $4} $1 == n {c[$2] = $4} END {for (r in c) if (r in t && t[r] > 0) print c[r] / t[r]}' "$RES" | median)
	printf "| %s | %.0f | %.1f | %s | %.2f× | %.2f× | %s |\n" "$1" "$rps" "$cpu" "$p99" "${ratio:-0}" "${cratio:-0}" "$all"
done
