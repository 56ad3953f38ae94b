#!/usr/bin/env bash
# bench-dashboard.sh: what the live dashboard and the refusal log cost the
# gateway's refusal throughput, A/B in one run: tollgate refusing every
# request (one client, rate 1/h) with
#
#   off      admin.dashboard.enabled: false (no heavy-hitter counting)
#   closed   the dashboard on (the default), no page open
#   open     the same server with VIEWERS pages open (event streams read
#            by curl; period PERIOD)
#   log      the dashboard on and the refusal log on (every refusal,
#            max_lines 100 per 1s interval, to a file)
#
# measured with wrk in interleaved rounds; prints medians and ratios as a
# Markdown table, with the server's CPU time per request (less disturbed
# by a shared machine than throughput) and the refusal log's size.
#
#   scripts/bench-dashboard.sh [ROUNDS] [SECONDS]    defaults: 6 rounds of 5 s
#
# Needs: go, wrk, curl. Listens on 127.0.0.1:18281-18293; stops all on exit.
set -euo pipefail

ROUNDS=${1:-6}
SECS=${2:-5}
CONNS=${CONNS:-32}
VIEWERS=${VIEWERS:-1}
PERIOD=${PERIOD:-1s}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/bench-lib.sh"
RUN=$(mktemp -d /tmp/bench-dashboard.XXXXXX)
PIDS=()
VIEWPIDS=()
cleanup() {
	for p in "${VIEWPIDS[@]}" "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$RUN"
}
trap cleanup EXIT

(cd "$ROOT" && go build -o "$RUN/tollgate" ./cmd/tollgate)

common='reload: {watch: false}
routes: [{path: /, upstream: demo}]
rules: [{name: per-ip, policies: [{rate: 1/h, burst: 1}]}]
'
printf '%sadmin: {addr: "127.0.0.1:18291", dashboard: {enabled: false}}\n' "$common" >"$RUN/off.yaml"
printf '%sadmin: {addr: "127.0.0.1:18292", dashboard: {period: %s}}\n' "$common" "$PERIOD" >"$RUN/on.yaml"
printf '%sadmin: {addr: "127.0.0.1:18293"}\nrefusal_log: {path: %s, interval: 1s}\n' "$common" "$RUN/refusals.log" >"$RUN/log.yaml"

declare -A PIDOF
start() { # name port config
	"$RUN/tollgate" serve -config "$3" -listen "127.0.0.1:$2" -log-level warn 2>"$RUN/$1.err" &
	PIDS+=($!)
	PIDOF[$2]=$!
}
start off 18281 "$RUN/off.yaml"
start on 18282 "$RUN/on.yaml"
start log 18283 "$RUN/log.yaml"
for port in 18281 18282 18283; do
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$port/" && break
		sleep 0.1
	done
done
HZ=$(getconf CLK_TCK)
CONFIGS=("off 18281" "closed 18282" "open 18282" "log 18283")
for c in "${CONFIGS[@]}"; do
	set -- $c
	echo "# $1: $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$2/")" >&2
	wrk -t2 -c"$CONNS" -d1s "http://127.0.0.1:$2/" >/dev/null
done

RES="$RUN/results"
: >"$RES"
for r in $(seq "$ROUNDS"); do
	# Odd rounds in order, even rounds reversed (ABBA): a load that drifts
	# during a round weighs on every configuration alike.
	order=("${CONFIGS[@]}")
	if [ $((r % 2)) -eq 0 ]; then
		order=()
		for ((i = ${#CONFIGS[@]} - 1; i >= 0; i--)); do order+=("${CONFIGS[$i]}"); done
	fi
	for c in "${order[@]}"; do
		set -- $c
		if [ "$1" = open ]; then
			for _ in $(seq "$VIEWERS"); do
				curl -sN "http://127.0.0.1:18292/dashboard/events" >"$RUN/events.$_" &
				VIEWPIDS+=($!)
			done
			sleep 1
		fi
		t0=$(cputicks "${PIDOF[$2]}")
		out=$(wrk -t2 -c"$CONNS" -d"${SECS}s" "http://127.0.0.1:$2/")
		t1=$(cputicks "${PIDOF[$2]}")
		if [ "$1" = open ]; then
			frames=$(cat "$RUN"/events.* | grep -c '^event: frame' || true)
			for p in "${VIEWPIDS[@]}"; do kill "$p" 2>/dev/null || true; done
			wait "${VIEWPIDS[@]}" 2>/dev/null || true
			VIEWPIDS=()
			[ "$frames" -gt 0 ] || { echo "open: no frame received" >&2; exit 1; }
		fi
		rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
		nreq=$(awk '/requests in/ {print $1}' <<<"$out")
		non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$out")
		cpu=$(awk -v a="$t0" -v b="$t1" -v n="$nreq" -v hz="$HZ" 'BEGIN {printf "%.2f", (b - a) / hz * 1e6 / n}')
		echo "$1 $r $rps $cpu ${non2xx:-0} $nreq" >>"$RES"
		echo "# round $r $1: $rps req/s (${non2xx:-0} of $nreq refused), server CPU $cpu µs/req${frames:+, $frames frames}" >&2
		frames=
	done
done

base_rps=$(awk '$1 == "closed" {print $3}' "$RES" | median)
base_cpu=$(awk '$1 == "closed" {print $4}' "$RES" | median)
echo
echo "| configuration | refusals/s (median of $ROUNDS) | vs closed | server CPU µs/req | vs closed | all refusals/s |"
echo "| --- | ---: | ---: | ---: | ---: | --- |"
for name in off closed open log; do
	rps=$(awk -v n="$name" '$1 == n {print $3}' "$RES" | median)
	cpu=$(awk -v n="$name" '$1 == n {print $4}' "$RES" | median)
	all=$(awk -v n="$name" '$1 == n {printf "%s%.0f", sep, $3; sep = ", "}' "$RES")
	printf "| %s | %.0f | %.3f | %.2f | %.3f | %s |\n" "$name" "$rps" "$(awk -v a="$rps" -v b="$base_rps" 'BEGIN {print a / b}')" \
		"$cpu" "$(awk -v a="$cpu" -v b="$base_cpu" 'BEGIN {print a / b}')" "$all"
done
refused=$(awk '$1 == "log" {n += $5} END {print n}' "$RES")
lines=$(grep -c '"msg":"limiting requests"' "$RUN/refusals.log" || true)
sums=$(grep -c '"msg":"limiting requests: summary"' "$RUN/refusals.log" || true)
bytes=$(wc -c <"$RUN/refusals.log")
echo
echo "refusal log: $refused refusals during the measured rounds (warm-up and checks included in the file): $lines lines, $sums summaries, $bytes bytes"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
