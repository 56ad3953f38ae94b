#!/usr/bin/env bash
# bench-gateway.sh: tollgate's gateway against nginx (and a plain net/http
# httputil.ReverseProxy) on loopback, all proxying to the same nginx origin,
# measured with wrk in interleaved rounds; prints medians as a Markdown table.
#
#   scripts/bench-gateway.sh [ROUNDS] [SECONDS]     defaults: 3 rounds of 5 s
#
# Needs: go, wrk, nginx (Debian nginx-light). Everything listens on
# 127.0.0.1:18081-18099 and is stopped on exit. The peer configurations come
# from ../shared/bench/edge (templates), or from $EDGE.
set -euo pipefail

ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${CONNS:-64}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
EDGE=${EDGE:-$ROOT/../shared/bench/edge}
[ -f "$EDGE/nginx-proxy.conf.in" ] || EDGE=/work/shared/bench/edge
RUN=$(mktemp -d /tmp/bench-gateway.XXXXXX)
PIDS=()

cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for f in "$RUN"/*/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$RUN"
}
trap cleanup EXIT

for tool in wrk nginx go; do
	command -v $tool >/dev/null || { echo "bench-gateway: $tool is not installed" >&2; exit 1; }
done

# --- the origin: nginx answering 200 "ok" on :18081 -------------------------
mkdir -p "$RUN/origin/tmp"
sed "s|@RUN@|$RUN/origin|g" "$EDGE/nginx-origin.conf.in" >"$RUN/origin/nginx.conf"
nginx -c "$RUN/origin/nginx.conf" -p "$RUN/origin/" -g 'daemon off;' &
PIDS+=($!)

# --- nginx as the proxy: plain, never refusing, refusing --------------------
nginx_proxy() { # name port zone req
	local d="$RUN/nginx-$1"
	mkdir -p "$d/tmp"
	sed -e "s|@RUN@|$d|g" -e "s|@WORKERS@|2|" -e "s|18080|$2|" \
		-e "s|@LIMIT_ZONE@|$3|" -e "s|@LIMIT_REQ@|$4|" \
		"$EDGE/nginx-proxy.conf.in" >"$d/nginx.conf"
	nginx -c "$d/nginx.conf" -p "$d/" -g 'daemon off;' &
	PIDS+=($!)
}
nginx_proxy plain 18082 "" ""
nginx_proxy allow 18083 'limit_req_zone $binary_remote_addr zone=z:10m rate=1000000r/s;' 'limit_req zone=z burst=1000 nodelay;'
nginx_proxy deny 18084 'limit_req_zone $binary_remote_addr zone=z:10m rate=100r/s;' 'limit_req zone=z;'

# --- tollgate: no rule, a rule that never refuses, a rule that always does ---
(cd "$ROOT" && go build -o "$RUN/tollgate" ./cmd/tollgate)
tollgate() { # name port rules-yaml
	cat >"$RUN/tollgate-$1.yaml" <<YAML
listen: {addr: "127.0.0.1:$2"}
admin: {addr: "off"}
reload: {watch: false}
upstream: {max_conns: 512}
routes: [{path: /, upstream: "http://127.0.0.1:18081"}]
$3
YAML
	"$RUN/tollgate" check -q "$RUN/tollgate-$1.yaml"
	"$RUN/tollgate" serve -config "$RUN/tollgate-$1.yaml" -log-level error &
	PIDS+=($!)
}
tollgate norule 18090 ""
tollgate allow 18091 'rules: [{name: per-ip, key: ip, policies: [{algorithm: token_bucket, rate: 1000000/s, burst: 1000}]}]'
tollgate deny 18092 'rules: [{name: per-ip, key: ip, policies: [{algorithm: token_bucket, rate: 1/h, burst: 1}]}]'

# --- baseline: net/http httputil.ReverseProxy, and a net/http 429 responder --
mkdir -p "$RUN/stdproxy"
cat >"$RUN/stdproxy/main.go" <<'GO'
// stdproxy is the net/http baseline: httputil.ReverseProxy with upstream
// keep-alive, or (-deny) a handler answering every request 429 with the
// same header fields and problem body tollgate writes.
package main

import (
	"flag"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18095", "listen address")
	deny := flag.Bool("deny", false, "answer 429 to everything")
	flag.Parse()
	var h http.Handler
	if *deny {
		body := []byte(`{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"retry in 3600 seconds","violated-policies":["per-ip"]}`)
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hd := w.Header()
			hd["Ratelimit-Policy"] = []string{`"per-ip";q=1;w=3600`}
			hd["Ratelimit"] = []string{`"per-ip";r=0;t=3600`}
			hd["Retry-After"] = []string{"3600"}
			hd["Cache-Control"] = []string{"no-store"}
			hd["Content-Type"] = []string{"application/problem+json"}
			w.WriteHeader(429)
			w.Write(body)
		})
	} else {
		u, _ := url.Parse("http://127.0.0.1:18081")
		p := httputil.NewSingleHostReverseProxy(u)
		p.Transport = &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512}
		h = p
	}
	log.Fatal(http.ListenAndServe(*addr, h))
}
GO
(cd "$RUN/stdproxy" && GOFLAGS= GO111MODULE=off go build -o stdproxy main.go)
"$RUN/stdproxy/stdproxy" -addr 127.0.0.1:18095 &
PIDS+=($!)
"$RUN/stdproxy/stdproxy" -addr 127.0.0.1:18096 -deny &
PIDS+=($!)

# Wait for every port.
for port in 18081 18082 18083 18084 18090 18091 18092 18095 18096; do
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
		out=$(wrk -t2 -c"$CONNS" -d"${SECS}s" --latency "http://127.0.0.1:$2/")
		rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
		p50=$(awk '$1=="50%" {print $2}' <<<"$out")
		p99=$(awk '$1=="99%" {print $2}' <<<"$out")
		non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$out")
		echo "$1 $r $rps $p50 $p99 ${non2xx:-0}" >>"$RES"
		echo "# round $r $1: $rps req/s, p50 $p50, p99 $p99, non-2xx ${non2xx:-0}" >&2
	done
done

# Medians (ROUNDS values each) as a Markdown table.
to_us() { # wrk latency (123.45us, 1.23ms, 1.2s) to microseconds
	awk -v v="$1" 'BEGIN {
		n = v + 0
		if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else if (v ~ /s$/) print n * 1000000; else print n
	}'
}
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo
echo "| configuration | req/s (median of $ROUNDS) | p50 µs | p99 µs | all req/s |"
echo "| --- | ---: | ---: | ---: | --- |"
for c in "${CONFIGS[@]}"; do
	set -- $c
	rps=$(awk -v n="$1" '$1 == n {print $3}' "$RES" | median)
	p50=$(awk -v n="$1" '$1 == n {print $4}' "$RES" | while read -r v; do to_us "$v"; done | median)
	p99=$(awk -v n="$1" '$1 == n {print $5}' "$RES" | while read -r v; do to_us "$v"; done | median)
	all=$(awk -v n="$1" '$1 == n {printf "%s%.0f", sep, $3; sep = ", "}' "$RES")
	printf "| %s | %.0f | %.0f | %.0f | %s |\n" "$1" "$rps" "$p50" "$p99" "$all"
done
