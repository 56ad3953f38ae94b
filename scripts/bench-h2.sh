#!/usr/bin/env bash
# bench-h2.sh: tollgate's HTTP/2 data path (listen.http2 on) against Caddy's
# reverse_proxy, a bare net/http httputil.ReverseProxy serving h2c
# (bench/peers/stdproxy -h2c) and nginx http2 + limit_req, all proxying to
# the same nginx origin over HTTP/1.1, measured with h2load in interleaved
# rounds; prints medians as a Markdown table.
#
#   scripts/bench-h2.sh [ROUNDS] [REQUESTS]     defaults: 3 rounds of 100000
#
# ONLY="name ..." measures only the named configurations. TOLLGATE=path
# measures that tollgate binary instead of building this tree's;
# TOLLGATE_B=path adds a second build (tollgate-b-h2-rule-allow and
# tollgate-b-h2-rule-deny on 18390-18391), measured in the same rounds.
#
# h2load runs 8 connections with 8 streams each (64 streams), h2c with
# prior knowledge; TLS=1 measures h2 over TLS (ALPN) instead. Besides
# requests per second it records the server's CPU time per request.
# Needs: go, h2load (Debian nghttp2-client), nginx, caddy, openssl (TLS).
# Everything listens on 127.0.0.1:18381-18391 and is stopped on exit.
set -euo pipefail

ROUNDS=${1:-3}
N=${2:-100000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
EDGE=$ROOT/scripts/nginx
RUN=$(mktemp -d /tmp/bench-h2.XXXXXX)
. "$ROOT/scripts/bench-lib.sh"
PIDS=()
declare -A PIDOF
cleanup() {
	stop_servers
	rm -rf "$RUN"
}
trap cleanup EXIT
need_tools bench-h2 h2load nginx caddy go curl
SCHEME=http
if [ "${TLS:-}" = 1 ]; then
	SCHEME=https
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$RUN/key.pem" -out "$RUN/cert.pem" 2>/dev/null
fi

# --- the origin: nginx answering 200 "ok" on :18381, HTTP/1.1 ---------------
start_origin 18381

# --- nginx http2 + limit_req: never refusing, refusing -------------------------
nginx_h2() { # name port zone req
	local d="$RUN/nginx-$1" opts=http2 ssl=""
	if [ "$SCHEME" = https ]; then
		opts="ssl http2"
		ssl="ssl_certificate $RUN/cert.pem; ssl_certificate_key $RUN/key.pem;"
	fi
	mkdir -p "$d/tmp"
	sed -e "s|@RUN@|$d|g" -e "s|@PORT@|$2|" -e "s|@LISTEN_OPTS@|$opts|" -e "s|@SSL@|$ssl|" \
		-e "s|@ORIGIN@|127.0.0.1:18381|" -e "s|@LIMIT_ZONE@|$3|" -e "s|@LIMIT_REQ@|$4|" \
		"$EDGE/nginx-h2.conf.in" >"$d/nginx.conf"
	nginx -c "$d/nginx.conf" -p "$d/" -g 'daemon off;' &
	PIDS+=($!)
	PIDOF[$2]=$!
}
nginx_h2 allow 18383 'limit_req_zone $binary_remote_addr zone=z:10m rate=1000000r/s;' 'limit_req zone=z burst=1000 nodelay;'
nginx_h2 deny 18384 'limit_req_zone $binary_remote_addr zone=z:10m rate=100r/s;' 'limit_req zone=z;'

# --- tollgate, listen.http2 on: a rule that never refuses, one that always does
build_tollgate "$RUN/tollgate"
tollgate() { # name port rules-yaml
	local tls=""
	[ "$SCHEME" = https ] && tls=", tls: {cert: $RUN/cert.pem, key: $RUN/key.pem}"
	start_tollgate "$1" "$2" 18381 ", http2: on$tls" "$3"
}
ALLOW='rules: [{name: per-ip, key: ip, policies: [{algorithm: token_bucket, rate: 1000000/s, burst: 1000}]}]'
DENY='rules: [{name: per-ip, key: ip, policies: [{algorithm: token_bucket, rate: 1/h, burst: 1}]}]'
tollgate allow 18385 "$ALLOW"
tollgate deny 18386 "$DENY"
if [ -n "${TOLLGATE_B:-}" ]; then
	cp "$TOLLGATE_B" "$RUN/tollgate-b"
	TGBIN=$RUN/tollgate-b tollgate b-allow 18390 "$ALLOW"
	TGBIN=$RUN/tollgate-b tollgate b-deny 18391 "$DENY"
fi

# --- Caddy's reverse_proxy (no rate limiting: it has none built in) -----------
mkdir -p "$RUN/caddy"
if [ "$SCHEME" = https ]; then
	site="https://127.0.0.1:18387"
	tlsline="tls $RUN/cert.pem $RUN/key.pem"
	protos="h1 h2"
else
	site="http://127.0.0.1:18387"
	tlsline=""
	protos="h1 h2c"
fi
cat >"$RUN/caddy/Caddyfile" <<CADDY
{
	admin off
	auto_https off
	storage file_system $RUN/caddy
	servers {
		protocols $protos
	}
}
$site {
	$tlsline
	reverse_proxy 127.0.0.1:18381
}
CADDY
XDG_DATA_HOME=$RUN/caddy XDG_CONFIG_HOME=$RUN/caddy caddy run --config "$RUN/caddy/Caddyfile" --adapter caddyfile >"$RUN/caddy/log" 2>&1 &
PIDS+=($!)
PIDOF[18387]=$!

# --- the bare standard stack: httputil.ReverseProxy over h2c ------------------
if [ "$SCHEME" = http ]; then
	mkdir -p "$RUN/peers"
	(cd "$ROOT/bench" && go build -o "$RUN/peers/" ./peers/stdproxy)
	"$RUN/peers/stdproxy" -addr 127.0.0.1:18388 -h2c -upstream http://127.0.0.1:18381 &
	PIDS+=($!)
	PIDOF[18388]=$!
	# and net/http's own 429 over h2c: the stack's ceiling for refusals
	"$RUN/peers/stdproxy" -addr 127.0.0.1:18389 -h2c -deny &
	PIDS+=($!)
	PIDOF[18389]=$!
fi

HZ=$(getconf CLK_TCK)
CURLPROTO=--http2-prior-knowledge
[ "$SCHEME" = https ] && CURLPROTO="--http2 -k"
for port in "${!PIDOF[@]}"; do
	for _ in $(seq 100); do
		curl -s -o /dev/null $CURLPROTO "$SCHEME://127.0.0.1:$port/" 2>/dev/null && break
		[ "$port" = 18381 ] && curl -s -o /dev/null "http://127.0.0.1:$port/" && break
		sleep 0.1
	done
done

CONFIGS=("nginx-h2-limit-allow 18383" "tollgate-h2-rule-allow 18385" "caddy-reverse-proxy 18387")
[ "$SCHEME" = http ] && CONFIGS+=("nethttp-reverseproxy-h2c 18388")
[ -n "${PIDOF[18390]:-}" ] && CONFIGS+=("tollgate-b-h2-rule-allow 18390")
CONFIGS+=("nginx-h2-limit-deny 18384" "tollgate-h2-rule-deny 18386")
[ -n "${PIDOF[18391]:-}" ] && CONFIGS+=("tollgate-b-h2-rule-deny 18391")
[ "$SCHEME" = http ] && CONFIGS+=("nethttp-429-h2c 18389")
only_configs
for c in "${CONFIGS[@]}"; do
	set -- $c
	echo "# $1: $(curl -s -o /dev/null -w '%{http_code} %{http_version}' $CURLPROTO "$SCHEME://127.0.0.1:$2/") $(curl -s -o /dev/null -w '%{http_code}' $CURLPROTO "$SCHEME://127.0.0.1:$2/")" >&2
	h2load -n 2000 -c 8 -m 8 "$SCHEME://127.0.0.1:$2/" >/dev/null
done

RES="$RUN/results"
: >"$RES"
for r in $(seq "$ROUNDS"); do
	for c in "${CONFIGS[@]}"; do
		set -- $c
		t0=$(cputicks "${PIDOF[$2]}")
		out=$(h2load -n "$N" -c 8 -m 8 "$SCHEME://127.0.0.1:$2/")
		t1=$(cputicks "${PIDOF[$2]}")
		rps=$(awk '/^finished in/ {print $4}' <<<"$out")
		ok=$(awk '/^status codes:/ {print $3}' <<<"$out")
		c4=$(awk '/^status codes:/ {print $7}' <<<"$out")
		failed=$(awk '/^requests:/ {print $10}' <<<"$out")
		cpu=$(awk -v a="$t0" -v b="$t1" -v n="$N" -v hz="$HZ" 'BEGIN {printf "%.1f", (b - a) / hz * 1e6 / n}')
		echo "$1 $r $rps $ok $c4 $failed $cpu" >>"$RES"
		echo "# round $r $1: $rps req/s, 2xx $ok, 4xx $c4, failed $failed, server CPU $cpu µs/req" >&2
	done
done

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| configuration ($SCHEME, h2load -n $N -c 8 -m 8) | req/s (median of $ROUNDS) | rounds | 2xx | 4xx | server CPU µs/req |"
echo "| --- | ---: | --- | ---: | ---: | ---: |"
for c in "${CONFIGS[@]}"; do
	set -- $c
	med=$(awk -v n="$1" '$1==n {print $3}' "$RES" | median)
	all=$(awk -v n="$1" '$1==n {printf "%s%.0f", sep, $3; sep=", "}' "$RES")
	ok=$(awk -v n="$1" '$1==n {print $4}' "$RES" | median)
	c4=$(awk -v n="$1" '$1==n {print $5}' "$RES" | median)
	cpu=$(awk -v n="$1" '$1==n {print $7}' "$RES" | median)
	printf '| %s | %.0f | %s | %s | %s | %s |\n' "$1" "$med" "$all" "$ok" "$c4" "$cpu"
done
