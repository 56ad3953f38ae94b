#!/usr/bin/env bash
# bench-rules.sh: the overhead of issue 26's rules through the gateway,
# in one interleaved wrk run (scripts/bench-gateway.sh's method: the
# server's CPU time per request, which a shared, noisy machine disturbs
# much less than throughput, beside req/s), against one nginx origin:
#
#   base          an allowed request, a per-IP rule (token bucket that
#                 never refuses)
#   except-10k    the same rule with an exemption list of 10,000 CIDRs
#                 (except: clients_file) the client is not in
#   country       the same rule keyed by country, from a GeoLite2-Country-
#                 shaped database of 100,000 networks with 127.0.0.1 in it
#                 (bench/mmdbgen)
#   count-deny    refusals of a rule with count: (statuses [200]: the first
#                 answer charges, every later request is refused)
#   deny          refusals of the same rule without count:
#
# Acceptance (issue 26), each the median over the rounds of the per-round
# ratio of CPU per request: except-10k ≤ 1.02 × base; country ≤ 1.05 ×
# base; count-deny ≤ deny.
#
#   scripts/bench-rules.sh [ROUNDS] [SECONDS]     defaults: 3 rounds of 5 s
#
# TOLLGATE=path measures that binary instead of building this tree's;
# TOLLGATE_EXCEPT=path runs except-10k on that binary instead, beside its
# own base (base-except), and judges it against that one (for a build
# whose exemptions are on another branch than its country and count:);
# CONNS sets wrk's connections (64). Needs: go, wrk, nginx, curl. Everything
# listens on 127.0.0.1:18381-18396 and is stopped on exit.
set -euo pipefail

ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${CONNS:-64}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
EDGE=$ROOT/scripts/nginx
RUN=$(mktemp -d /tmp/bench-rules.XXXXXX)
PIDS=()
declare -A PIDOF # port -> process id of the server on it (nginx: the master)

. "$ROOT/scripts/bench-lib.sh" # need_tools, stop_servers, start_origin, build_tollgate, start_tollgate, cputicks, median, ports_free

cleanup() {
	stop_servers
	rm -rf "$RUN"
}
trap cleanup EXIT

need_tools bench-rules wrk nginx go curl
ports_free 18381 18391 18392 18393 18394 18395 18396

# --- the origin: nginx answering 200 "ok" on :18381 -------------------------
start_origin 18381

# --- the inputs: 10,000 CIDRs outside 127.0.0.0/8, a country database --------
# MINSTD (exact in awk's doubles): the same list every run, prefixes of /12
# to /32 with their host bits cleared, no duplicates.
awk 'BEGIN {
	x = 26
	while (n < 10000) {
		x = x * 48271 % 2147483647; hi = x % 65536
		x = x * 48271 % 2147483647; lo = x % 65536
		x = x * 48271 % 2147483647; bits = 12 + x % 21
		ip = hi * 65536 + lo
		a = int(ip / 16777216)
		if (a == 127 || a == 0) ip += 16777216
		block = 2 ^ (32 - bits); ip -= ip % block
		s = sprintf("%d.%d.%d.%d/%d", int(ip / 16777216), int(ip / 65536) % 256, int(ip / 256) % 256, ip % 256, bits)
		if (!(s in seen)) { seen[s] = 1; print s; n++ }
	}
}' >"$RUN/except-cidrs.txt"
(cd "$ROOT/bench" && go run ./mmdbgen -o "$RUN/country.mmdb" -n 100000 -client 127.0.0.1 -country DE)

# --- tollgate: the five configurations ---------------------------------------
build_tollgate "$RUN/tollgate"
tollgate() { start_tollgate "$1" "$2" 18381 "" "$3"; } # name port yaml
ALLOW='policies: [{algorithm: token_bucket, rate: 1000000/s, burst: 1000}]'
DENY='policies: [{algorithm: token_bucket, rate: 1/h, burst: 1}]'
tollgate base 18391 "rules: [{name: per-ip, key: ip, $ALLOW}]"
EXCEPT="rules: [{name: per-ip, key: ip, except: [{clients_file: \"$RUN/except-cidrs.txt\"}], $ALLOW}]"
EXCEPT_BASE=base
if [ -n "${TOLLGATE_EXCEPT:-}" ]; then
	cp "$TOLLGATE_EXCEPT" "$RUN/tollgate-except"
	TGBIN=$RUN/tollgate-except tollgate base-except 18396 "rules: [{name: per-ip, key: ip, $ALLOW}]"
	TGBIN=$RUN/tollgate-except tollgate except 18392 "$EXCEPT"
	EXCEPT_BASE=base-except
else
	tollgate except 18392 "$EXCEPT"
fi
tollgate country 18393 "geoip: {country: \"$RUN/country.mmdb\"}
rules: [{name: per-country, key: country, $ALLOW}]"
tollgate count-deny 18394 "rules: [{name: per-ip, key: ip, count: {statuses: [\"200\"]}, $DENY}]"
tollgate deny 18395 "rules: [{name: per-ip, key: ip, $DENY}]"

HZ=$(getconf CLK_TCK)
for port in "${!PIDOF[@]}"; do
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$port/" && break
		sleep 0.1
	done
done

# name port: measured in this order, rotated by one each round.
CONFIGS=(
	"base 18391"
)
if [ -n "${TOLLGATE_EXCEPT:-}" ]; then
	CONFIGS+=("base-except 18396")
fi
CONFIGS+=(
	"except-10k 18392"
	"country 18393"
	"count-deny 18394"
	"deny 18395"
)

# The allowing configurations allow (and limit: a RateLimit field, so the
# client is not exempt); the refusing ones refuse.
for c in "${CONFIGS[@]}"; do
	set -- $c
	codes=$(for _ in 1 2; do curl -s -o /dev/null -w '%{http_code} ' "http://127.0.0.1:$2/"; done)
	limited=$(curl -s -D - -o /dev/null "http://127.0.0.1:$2/" | grep -ci '^ratelimit' || true)
	echo "# $1: $codes(rate-limit fields: $limited)" >&2
	case $1 in
	*deny) [ "$codes" = "429 429 " ] || { echo "bench-rules: $1 does not refuse: $codes" >&2; exit 1; } ;;
	*) [ "$codes" = "200 200 " ] && [ "$limited" -gt 0 ] || { echo "bench-rules: $1 is not an allowed, limited request: $codes, $limited fields" >&2; exit 1; } ;;
	esac
done

for c in "${CONFIGS[@]}"; do
	set -- $c
	wrk -t2 -c"$CONNS" -d1s "http://127.0.0.1:$2/" >/dev/null
done

echo "# load average before: $(cat /proc/loadavg)" >&2
RES="$RUN/results"
: >"$RES"
N=${#CONFIGS[@]}
for r in $(seq "$ROUNDS"); do
	# Each round starts one configuration later than the one before, so
	# that no configuration always runs in the same place of a round (the
	# first run of a round on a machine the last one left busy, the third
	# after two others' connections).
	for i in $(seq 0 $((N - 1))); do
		set -- ${CONFIGS[$(((i + r - 1) % N))]}
		t0=$(cputicks "${PIDOF[$2]}")
		out=$(wrk -t2 -c"$CONNS" -d"${SECS}s" "http://127.0.0.1:$2/")
		t1=$(cputicks "${PIDOF[$2]}")
		rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
		nreq=$(awk '/requests in/ {print $1}' <<<"$out")
		cpu=$(awk -v a="$t0" -v b="$t1" -v n="$nreq" -v hz="$HZ" 'BEGIN {printf "%.2f", (b - a) / hz * 1e6 / n}')
		non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$out")
		echo "$1 $r $rps $cpu ${non2xx:-0} $nreq" >>"$RES"
		echo "# round $r $1: $rps req/s, non-2xx ${non2xx:-0}, server CPU $cpu µs/req" >&2
	done
done
echo "# load average after: $(cat /proc/loadavg)" >&2

echo
echo "| configuration | req/s (median of $ROUNDS) | server CPU µs/req (median) | non-2xx share | all CPU µs/req |"
echo "| --- | ---: | ---: | ---: | --- |"
for c in "${CONFIGS[@]}"; do
	set -- $c
	rps=$(awk -v n="$1" '$1 == n {print $3}' "$RES" | median)
	cpu=$(awk -v n="$1" '$1 == n {print $4}' "$RES" | median)
	share=$(awk -v n="$1" '$1 == n {a += $5; b += $6} END {printf "%.3f", b ? a / b : 0}' "$RES")
	all=$(awk -v n="$1" '$1 == n {printf "%s%s", sep, $4; sep = ", "}' "$RES")
	printf "| %s | %.0f | %.2f | %s | %s |\n" "$1" "$rps" "$cpu" "$share" "$all"
done

# Paired ratios: each round's A/B (measured seconds apart), median over
# the rounds, against the acceptance's bound.
echo
echo "| A vs B (median of per-round ratios) | CPU/req A ÷ B | req/s A ÷ B | target | verdict |"
echo "| --- | ---: | ---: | ---: | --- |"
for pair in "except-10k/$EXCEPT_BASE/1.02" country/base/1.05 count-deny/deny/1.00; do
	IFS=/ read -r a b bound <<<"$pair"
	grep -q "^$a " "$RES" && grep -q "^$b " "$RES" || continue
	cr=$(awk -v a="$a" -v b="$b" '$1 == a {x[$2] = $4} $1 == b {y[$2] = $4} END {for (r in x) if (y[r] > 0) print x[r] / y[r]}' "$RES" | median)
	rr=$(awk -v a="$a" -v b="$b" '$1 == a {x[$2] = $3} $1 == b {y[$2] = $3} END {for (r in x) if (y[r] > 0) print x[r] / y[r]}' "$RES" | median)
	verdict=$(awk -v c="$cr" -v t="$bound" 'BEGIN {print (c <= t + 1e-9) ? "met" : "not met"}')
	printf "| %s vs %s | %.3f | %.3f | ≤ %s | %s |\n" "$a" "$b" "$cr" "$rr" "$bound" "$verdict"
done
