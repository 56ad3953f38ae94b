#!/usr/bin/env bash
# bench.sh: every headline comparison of BENCHMARKS.md in one interleaved
# run, and its at-a-glance table.
#
#   scripts/bench.sh [-quick] [-rounds N] [-secs S] [-steps "core http ..."]
#                    [-compare REF] [-o FILE] [-write] [-dry-run]
#   scripts/bench.sh -table RESULTS      # format a results file only
#
# Each round runs every step once, tollgate and its peer in the same step
# (and, with -compare, the build of REF beside them), so a slow moment of
# the shared machine falls on all of them; the table gives medians over the
# rounds. The steps, each calling the harness that measures its area:
#
#   core     bench/core_test.go: memory store, random key among 1M vs mutex +
#            map + x/time/rate; one hot key vs one rate.Limiter
#   http     bench/httplimit_test.go: net/http middleware vs go-limiter
#   gateway  scripts/bench-gateway.sh: allow and refuse vs nginx limit_req
#   fauth    scripts/bench-forwardauth.sh: nginx + auth_request + tollgate
#            forward-auth vs its floor (auth_request to a bare 200)
#   redis    bench/redis_test.go: Redis strict vs redis_rate, 64 callers
#   rls      bench/rlsload: envoy-rls vs envoyproxy/ratelimit, 64 callers
#   replay   bench/replay_speed.sh: lines/s on one core, 200,000 clients
#   h2       scripts/bench-h2.sh: HTTP/2 refusal vs a bare net/http 429 (and
#            nginx), proxying vs Caddy
#
# CPU per operation is the primary figure (the servers' CPU time from
# /proc, or ns/op of a single-goroutine benchmark), beside throughput and
# p99. The table (at most 10 rows: what, tollgate, peer, ratio, target,
# command), with the date, commit and load average, goes to standard output
# and to -o FILE (default bench-table.md in the run's folder, which is
# kept); -write also puts it into BENCHMARKS.md between the markers
# "<!-- bench.sh table -->" and "<!-- /bench.sh table -->".
#
# -compare REF builds REF (a commit, tag or branch) in a temporary git
# worktree and measures it in the same rounds beside this tree's build; the
# table gains the columns "REF" and "this ÷ REF" (CPU per operation, so
# above 1 is a regression).
#
# Defaults: 5 rounds, 5 s per server load (about 10-15 minutes on 2 cores);
# -quick: 1 round, short loads (a smoke run, about 2 minutes). -dry-run
# prints every step's command and checks that it exists, without running
# or installing anything, then formats a sample table.
#
# Installs what it needs where it is missing, as scripts/test.sh does
# (Debian: wrk, nghttp2-client for h2load, nginx, caddy, redis-server;
# envoyproxy/ratelimit from the bench module's pinned tool). Every server
# listens on 127.0.0.1 and is stopped on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
HERE=$PWD
cd "$ROOT"
abs() { case $1 in /*) echo "$1" ;; *) echo "$HERE/$1" ;; esac; } # a path given relative to where bench.sh was started
. scripts/bench-lib.sh # median

ROUNDS=5 SECS=5 QUICK=0 COMPARE="" OUT="" WRITE=0 DRY=0 TABLE=""
STEPS="core http gateway fauth redis rls replay h2"
while [ $# -gt 0 ]; do
	case "$1" in
	-quick) QUICK=1 ;;
	-rounds) ROUNDS=$2; shift ;;
	-secs) SECS=$2; shift ;;
	-steps) STEPS=$2; shift ;;
	-compare) COMPARE=$2; shift ;;
	-o) OUT=$(abs "$2"); shift ;;
	-write) WRITE=1 ;;
	-dry-run) DRY=1 ;;
	-table) TABLE=$(abs "$2"); shift ;;
	-h | -help | --help) sed -n '2,48p' "$0"; exit 0 ;;
	*) echo "bench.sh: unknown flag $1 (-help)" >&2; exit 2 ;;
	esac
	shift
done
BENCHTIME=1s HTTPTIME=100000x REDISTIME=20000x H2N=20000 REPLAYN=2000000 RLSDUR=3s
if [ "$QUICK" = 1 ]; then
	ROUNDS=1 SECS=2 BENCHTIME=200ms HTTPTIME=20000x REDISTIME=3000x H2N=4000 REPLAYN=300000 RLSDUR=1s
fi
case "$ROUNDS" in '' | *[!0-9]* | 0) echo "bench.sh: -rounds wants a positive integer" >&2; exit 2 ;; esac
for s in $STEPS; do
	case " core http gateway fauth redis rls replay h2 " in *" $s "*) ;; *) echo "bench.sh: unknown step $s" >&2; exit 2 ;; esac
done

# --- the table ---------------------------------------------------------------
# The results file has one measurement a line: METRIC ROUND VALUE, where
# METRIC is STEP.CASE.WHO.UNIT and WHO is tollgate, ref (the -compare
# build) or the peer's name.

RES=""
# med METRIC: its median over the rounds; nothing when it was not measured.
med() {
	local v
	v=$(awk -v m="$1" '$1 == m {print $3}' "$RES")
	[ -z "$v" ] || median <<<"$v"
}
# rat A B: the median over the rounds of A/B, each round's pair measured
# seconds apart.
rat() {
	local v
	v=$(awk -v a="$1" -v b="$2" '$1 == a {x[$2] = $3} $1 == b {y[$2] = $3} END {for (r in x) if ((r in y) && y[r] > 0) print x[r] / y[r]}' "$RES")
	[ -z "$v" ] || median <<<"$v"
}
num() { # num PRINTF-FORMAT VALUE: VALUE formatted, or "–" when missing
	if [ -z "$2" ]; then echo "–"; else LC_ALL=C printf "$1" "$2"; fi
}
k() { # a count in thousands: 56.9k
	if [ -z "$1" ]; then echo "–"; else awk -v v="$1" 'BEGIN {if (v >= 1e6) printf "%.2f M", v / 1e6; else if (v >= 1e4) printf "%.1fk", v / 1e3; else printf "%.0f", v}'; fi
}
us() { # µs, from µs: 3 significant figures
	if [ -z "$1" ]; then echo "–"; else awk -v v="$1" 'BEGIN {if (v >= 1000) printf "%.1f ms", v / 1000; else if (v >= 100) printf "%.0f µs", v; else printf "%.1f µs", v}'; fi
}
x() { num '%.2f×' "$1"; }
# verdict RATIO OP BOUND: met / not met.
verdict() {
	[ -n "$1" ] || { echo "not measured"; return; }
	if awk -v r="$1" -v b="$3" -v op="$2" 'BEGIN {exit !((op == ">=" && r >= b) || (op == "<=" && r <= b))}'; then echo "**met**"; else echo "**not met**"; fi
}

# A server row: STEP.CASE with tollgate and PEER measured by cpu (µs/op),
# rps and p99 (µs).
server_cell() { # STEP.CASE WHO
	local c r p
	c=$(med "$1.$2.cpu") r=$(med "$1.$2.rps") p=$(med "$1.$2.p99")
	[ -n "$c" ] || { echo "–"; return; }
	printf '%s CPU, %s/s' "$(us "$c")" "$(k "$r")"
	[ -z "$p" ] || printf ', p99 %s' "$(us "$p")"
}

# The rows. Each prints: what | tollgate | peer | ratio | target | command,
# and sets PRIMARY (the metric whose ref ratio -compare shows).
ROWS=()
row() { ROWS+=("$1"); }
table_rows() {
	ROWS=() PRIMARY=()
	local t p e r
	# 1. core, random key
	t=$(med core.rand.tollgate.ns) p=$(med core.rand.mutexmap.ns) e=$(rat core.rand.tollgate.ns core.rand.mutexmap.ns)
	row "one decision, memory store, random key among 1M | $(num '%.0f ns' "$t"), $(num '%.0f' "$(med core.rand.tollgate.allocs)") allocs | mutex + map + x/time/rate $(num '%.0f ns' "$p") | $(x "$e") | ≤ 0.5×: $(verdict "$e" '<=' 0.5) | [core](#core-algorithms-and-the-memory-store): \`-bench RandomKey\`"
	PRIMARY+=(core.rand.%s.ns)
	# 2. core, hot key (throughput ratio: the peer's ns over tollgate's)
	t=$(med core.hot.tollgate.ns) p=$(med core.hot.xrate.ns) e=$(rat core.hot.xrate.ns core.hot.tollgate.ns)
	c=$(med core.hot.coarse.ns) ec=$(rat core.hot.xrate.ns core.hot.coarse.ns)
	row "one hot key on 2 cores: a clock read per decision (the gateway's cached clock) | $(num '%.1f ns' "$t") ($(num '%.1f ns' "$c")) | one \`rate.Limiter\` $(num '%.1f ns' "$p") | $(x "$e") ($(x "$ec")) throughput | ≥ 1.5×: $(verdict "$e" '>=' 1.5) ($(verdict "$ec" '>=' 1.5)) | [core](#core-algorithms-and-the-memory-store): \`-bench HotKey\`"
	PRIMARY+=(core.hot.%s.ns)
	# 3. middleware: added over a bare handler
	t=$(med http.mw.tollgate.added) p=$(med http.mw.golimiter.added) e=$(rat http.mw.tollgate.added http.mw.golimiter.added)
	row "net/http middleware, added per allowed request | +$(num '%.2f µs' "$(awk -v v="$t" 'BEGIN {if (v != "") print v / 1000}')"), +$(num '%.0f' "$(med http.mw.tollgate.allocs)") allocs | go-limiter +$(num '%.2f µs' "$(awk -v v="$p" 'BEGIN {if (v != "") print v / 1000}')"), +$(num '%.0f' "$(med http.mw.golimiter.allocs)") allocs | $(x "$e") | ≤ 1 µs: $(verdict "$t" '<=' 1000) | [HTTP](#http-middleware-httplimit): \`-bench HTTP\`"
	PRIMARY+=(http.mw.%s.added)
	# 4, 5. gateway (CPU efficiency: nginx's CPU per request over tollgate's)
	for c in allow deny; do
		e=$(rat gateway.$c.nginx.cpu gateway.$c.tollgate.cpu) r=$(rat gateway.$c.tollgate.rps gateway.$c.nginx.rps)
		local what="gateway proxying, rule never refusing" bound=0.8
		[ $c = deny ] && what="gateway refusing every request (429)" bound=1.0
		row "$what | $(server_cell gateway.$c tollgate) | nginx \`limit_req\` $(server_cell gateway.$c nginx) | CPU $(x "$e") (req/s $(x "$r")) | CPU ≥ ${bound}×: $(verdict "$e" '>=' $bound) | [gateway](#gateway-tollgate-serve): \`scripts/bench-gateway.sh\`"
		PRIMARY+=(gateway.$c.%s.cpu)
	done
	# 6. forward-auth against its floor
	e=$(rat fauth.fa.floor.cpu fauth.fa.tollgate.cpu) r=$(rat fauth.fa.tollgate.rps fauth.fa.floor.rps)
	row "forward-auth: nginx + \`auth_request\` + tollgate (nginx + auth CPU) | $(server_cell fauth.fa tollgate) | floor: \`auth_request\` to a bare 200 $(server_cell fauth.fa floor); nginx alone $(us "$(med fauth.fa.alone.cpu)") | CPU $(x "$e") (req/s $(x "$r")) | ≥ 0.9× the floor: $(verdict "$e" '>=' 0.9) | [forward-auth](#forward-auth-what-nginx-pays-per-request-to-ask-tollgate): \`scripts/bench-forwardauth.sh\`"
	PRIMARY+=(fauth.fa.%s.cpu)
	# 7. Redis
	r=$(rat redis.c64.tollgate.rps redis.c64.redisrate.rps) e=$(rat redis.c64.redisrate.cpu redis.c64.tollgate.cpu)
	row "Redis, strict, decisions/s at 64 callers (Redis CPU a decision) | $(k "$(med redis.c64.tollgate.rps)")/s, Redis $(us "$(med redis.c64.tollgate.cpu)"), p99 $(us "$(med redis.c64.tollgate.p99)") | go-redis/redis_rate v10 $(k "$(med redis.c64.redisrate.rps)")/s, Redis $(us "$(med redis.c64.redisrate.cpu)"), p99 $(us "$(med redis.c64.redisrate.p99)") | $(x "$r") (Redis CPU $(x "$e")) | ≥ 3×: $(verdict "$r" '>=' 3) | [Redis](#redis-and-distributed-state): \`-bench RedisDecisions\`"
	PRIMARY+=(redis.c64.%s.cpu)
	# 8. envoy-rls: server + Redis CPU per call, cost ratio
	local e1 e3
	e1=$(rat rls.d1.tollgate.cpu rls.d1.envoy.cpu) e3=$(rat rls.d3.tollgate.cpu rls.d3.envoy.cpu)
	r=$(rat rls.d1.tollgate.rps rls.d1.envoy.rps)
	row "\`tollgate envoy-rls\` on Redis, 64 callers: server + Redis CPU per call, 1 / 3 descriptors | $(us "$(med rls.d1.tollgate.cpu)") / $(us "$(med rls.d3.tollgate.cpu)"), $(k "$(med rls.d1.tollgate.rps)")/s | envoyproxy/ratelimit $(us "$(med rls.d1.envoy.cpu)") / $(us "$(med rls.d3.envoy.cpu)"), $(k "$(med rls.d1.envoy.rps)")/s | cost $(x "$e1") / $(x "$e3") (throughput $(x "$r")) | cost ≤ 0.33×: $(verdict "$e1" '<=' 0.33) / $(verdict "$e3" '<=' 0.33) | [envoy-rls](#envoy-rate-limit-service-tollgate-envoy-rls-against-envoyproxyratelimit): \`go run ./rlsload\`"
	PRIMARY+=(rls.d1.%s.cpu)
	# 9. replay: lines per CPU second (one core's rate, undisturbed by the
	# machine's other work), beside the wall-clock rate
	t=$(med replay.lines.tollgate.cpu)
	r=$([ -z "$t" ] || awk -v c="$t" 'BEGIN {print 1e9 / c}')
	row "\`tollgate replay\`, lines/s on one core, 200,000 clients | $(k "$r") lines per CPU-second ($(num '%.0f ns' "$t") a line), $(k "$(med replay.lines.tollgate.rps)") lines/s wall | \`cat\` $(k "$(med replay.lines.cat.rps)") lines/s | – | ≥ 1 M: $(verdict "$r" '>=' 1000000) | [replay](#replay): \`bench/replay_speed.sh\`"
	PRIMARY+=(replay.lines.%s.cpu)
	# 10. HTTP/2: refusal against a bare net/http 429, proxying against Caddy
	e=$(rat h2.deny.nethttp.cpu h2.deny.tollgate.cpu) r=$(rat h2.allow.caddy.cpu h2.allow.tollgate.cpu)
	row "HTTP/2 (h2c): refusing / proxying | $(server_cell h2.deny tollgate) / $(us "$(med h2.allow.tollgate.cpu)") CPU, $(k "$(med h2.allow.tollgate.rps)")/s | bare net/http 429 $(server_cell h2.deny nethttp) (nginx $(us "$(med h2.deny.nginx.cpu)")) / Caddy $(us "$(med h2.allow.caddy.cpu)") CPU, $(k "$(med h2.allow.caddy.rps)")/s | CPU $(x "$e") / $(x "$r") | refusal CPU ≥ 1.0× bare net/http: $(verdict "$e" '>=' 1.0) | [HTTP/2](#http2-and-grpc-on-the-gateway): \`scripts/bench-h2.sh\`"
	PRIMARY+=(h2.deny.%s.cpu)
}

# table RESULTS: the Markdown table, with the date, commit and load average.
table() {
	RES=$1
	table_rows
	local meta
	meta=$(awk '$1 == "#meta" {sub(/^#meta /, ""); print; exit}' "$RES")
	echo "${meta:-Measured by scripts/bench.sh.}"
	echo
	if grep -q '\.ref\.' "$RES"; then
		local ref
		ref=$(awk '$1 == "#ref" {print $2; exit}' "$RES")
		echo "| what | tollgate | peer | ratio | target | command | ${ref:-ref} | this ÷ ${ref:-ref} (CPU or time per op) |"
		echo "| --- | ---: | --- | ---: | --- | --- | ---: | ---: |"
		local i m
		for i in "${!ROWS[@]}"; do
			m=${PRIMARY[$i]}
			local mr mt
			# shellcheck disable=SC2059 # the metric's pattern
			mr=$(printf "$m" ref) mt=$(printf "$m" tollgate)
			echo "| ${ROWS[$i]} | $(num '%.4g' "$(med "$mr")") | $(x "$(rat "$mt" "$mr")") |"
		done
	else
		echo "| what | tollgate | peer | ratio | target | command |"
		echo "| --- | ---: | --- | ---: | --- | --- |"
		local r
		for r in "${ROWS[@]}"; do echo "| $r |"; done
	fi
}

if [ -n "$TABLE" ]; then
	table "$TABLE"
	exit 0
fi

# --- the run -----------------------------------------------------------------
W=$(mktemp -d /tmp/bench.XXXXXX)
RES=$W/results
: >"$RES"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -d "$W/ref-src" ] && git -C "$ROOT" worktree remove --force "$W/ref-src" 2>/dev/null || true
	rm -rf "$W/bin" "$W/ref-src" "${REPLAYLOG:-$W/none}"
	[ "$DRY" = 0 ] || rm -rf "$W"
}
trap cleanup EXIT

# run CMD...: runs it (its standard error to the run's log), or with
# -dry-run prints it and checks that its program exists.
LOG=$W/log
MISSING=0
run() {
	if [ "$DRY" = 1 ]; then
		echo "  $*" >&2
		local prog=$1 a
		if [ "$prog" = env ]; then
			for a in "${@:2}"; do case $a in *=*) ;; *) prog=$a; break ;; esac; done
		fi
		case $prog in
		"$W"/*) ;; # built by this run
		*/*) [ -x "$prog" ] || { echo "bench.sh: $prog is missing or not executable" >&2; MISSING=1; } ;;
		*) command -v "$prog" >/dev/null || { echo "bench.sh: $prog is not installed (it is installed on a real run)" >&2; } ;;
		esac
		return 0
	fi
	echo "+ $*" >>"$LOG"
	"$@" 2>>"$LOG" | tee -a "$LOG"
}
put() { echo "$1 $2 $3" >>"$RES"; } # metric round value

# --- what it needs -------------------------------------------------------------
if [ "$DRY" = 0 ]; then
	. scripts/install-lib.sh # need_debian, envoy_ratelimit
	need_debian wrk:wrk h2load:nghttp2-client nginx:nginx caddy:caddy redis-server:redis-server curl:curl
	case " $STEPS " in *" rls "*) envoy_ratelimit || { echo "bench.sh: envoyproxy/ratelimit did not build; the rls step is skipped" >&2; STEPS=${STEPS/rls/}; } ;; esac
	export PATH=$PATH:/usr/sbin
fi

# --- the builds ----------------------------------------------------------------
mkdir -p "$W/bin"
echo "bench.sh: building (log: $LOG)" >&2
run go build -o "$W/bin/tollgate" ./cmd/tollgate
run go -C bench test -c -o "$W/bin/bench.test" .
run go -C bench build -o "$W/bin/" ./rlsload ./replay_gen
REF=""
if [ -n "$COMPARE" ]; then
	run git worktree add -q --detach "$W/ref-src" "$COMPARE"
	run go -C "$W/ref-src" build -o "$W/bin/tollgate-ref" ./cmd/tollgate
	run go -C "$W/ref-src/bench" test -c -o "$W/bin/bench-ref.test" .
	REF=$W/bin/tollgate-ref
	echo "#ref $COMPARE" >>"$RES"
fi
[ "$DRY" = 1 ] || [ -z "$COMPARE" ] || echo "bench.sh: $COMPARE is $(git rev-parse --short "$COMPARE")" >&2

# --- the steps -----------------------------------------------------------------
# gobench BINARY PATTERN BENCHTIME: the benchmark lines of one run, in
# its package's folder as go test would (bench/, or the -compare build's).
gobench() {
	local dir=$ROOT/bench
	[ "$1" = "$W/bin/bench.test" ] || dir=$W/ref-src/bench
	cd "$dir" 2>/dev/null || [ "$DRY" = 1 ] || return 1
	run "$1" -test.run '^$' -test.bench "$2" -test.benchtime "$3" -test.benchmem -test.count 1
	cd "$ROOT"
}
# metric NAME UNIT: the value before UNIT on the benchmark line NAME (the
# -N GOMAXPROCS suffix ignored).
metric() { awk -v n="$1" -v u="$2" '{sub(/-[0-9]+$/, "", $1)} $1 == n {for (i = 3; i <= NF; i++) if ($i == u) print $(i - 1)}'; }

step_core() { # ROUND
	local out who bin pat
	for who in tollgate ref; do
		bin=$W/bin/bench.test pat='^Benchmark(RandomKey|HotKey)$/^(tollgate|tollgate_coarse_clock|mutex_map_x_time_rate|x_time_rate_shared)$'
		if [ $who = ref ]; then
			[ -n "$REF" ] || continue
			bin=$W/bin/bench-ref.test pat='^Benchmark(RandomKey|HotKey)$/^tollgate$'
		fi
		out=$(gobench "$bin" "$pat" "$BENCHTIME")
		[ "$DRY" = 0 ] || continue
		put core.rand.$who.ns "$1" "$(metric BenchmarkRandomKey/tollgate ns/op <<<"$out")"
		put core.rand.$who.allocs "$1" "$(metric BenchmarkRandomKey/tollgate allocs/op <<<"$out")"
		put core.hot.$who.ns "$1" "$(metric BenchmarkHotKey/tollgate ns/op <<<"$out")"
		[ $who = ref ] && continue
		put core.rand.mutexmap.ns "$1" "$(metric BenchmarkRandomKey/mutex_map_x_time_rate ns/op <<<"$out")"
		put core.hot.xrate.ns "$1" "$(metric BenchmarkHotKey/x_time_rate_shared ns/op <<<"$out")"
		put core.hot.coarse.ns "$1" "$(metric BenchmarkHotKey/tollgate_coarse_clock ns/op <<<"$out")"
	done
}

step_http() {
	local out who bin pat bare bareA v a
	for who in tollgate ref; do
		bin=$W/bin/bench.test pat='^BenchmarkHTTP(Bare|TollgateDraft10|GoLimiter)$'
		if [ $who = ref ]; then
			[ -n "$REF" ] || continue
			bin=$W/bin/bench-ref.test pat='^BenchmarkHTTP(Bare|TollgateDraft10)$'
		fi
		# A count, not a time: go-limiter's memorystore refills a bucket
		# with only one token an interval (1 s here) after its first, so a
		# run longer than a second fails on a 429.
		out=$(gobench "$bin" "$pat" "$HTTPTIME")
		[ "$DRY" = 0 ] || continue
		bare=$(metric BenchmarkHTTPBare ns/op <<<"$out") bareA=$(metric BenchmarkHTTPBare allocs/op <<<"$out")
		for pair in "$who:TollgateDraft10" "golimiter:GoLimiter"; do
			[ $who = ref ] && [ "${pair%%:*}" = golimiter ] && continue
			v=$(metric "BenchmarkHTTP${pair#*:}" ns/op <<<"$out") a=$(metric "BenchmarkHTTP${pair#*:}" allocs/op <<<"$out")
			[ -n "$v" ] && [ -n "$bare" ] || continue
			put "http.mw.${pair%%:*}.added" "$1" "$(awk -v v="$v" -v b="$bare" 'BEGIN {print v - b}')"
			put "http.mw.${pair%%:*}.allocs" "$1" "$(awk -v v="$a" -v b="$bareA" 'BEGIN {print v - b}')"
		done
	done
}

step_redis() {
	local out who bin impl name
	for who in tollgate ref; do
		bin=$W/bin/bench.test impl='(tollgate|redis_rate)'
		if [ $who = ref ]; then
			[ -n "$REF" ] || continue
			bin=$W/bin/bench-ref.test impl=tollgate
		fi
		out=$(gobench "$bin" "^BenchmarkRedisDecisions\$/^impl=$impl\$/^callers=64\$" "$REDISTIME")
		[ "$DRY" = 0 ] || continue
		for pair in "$who:tollgate" "redisrate:redis_rate"; do
			[ $who = ref ] && [ "${pair%%:*}" = redisrate ] && continue
			name="BenchmarkRedisDecisions/impl=${pair#*:}/callers=64"
			put "redis.c64.${pair%%:*}.rps" "$1" "$(metric "$name" decisions/s <<<"$out")"
			put "redis.c64.${pair%%:*}.p99" "$1" "$(metric "$name" p99-µs <<<"$out")"
			put "redis.c64.${pair%%:*}.cpu" "$1" "$(metric "$name" redis-cpu-µs/decision <<<"$out")"
		done
	done
}

# mdrow NAME COLUMN: column COLUMN (1: the name) of the Markdown row NAME
# in a harness's table.
mdrow() { awk -F'|' -v n="$1" -v c="$2" '{gsub(/ /, "", $2)} $2 == n {v = $(c + 1); gsub(/ /, "", v); print v; exit}'; }

step_gateway() {
	local out only="nginx-limit-allow nginx-limit-deny tollgate-rule-allow tollgate-rule-deny"
	[ -z "$REF" ] || only="$only tollgate-b-rule-allow tollgate-b-rule-deny"
	out=$(run env ONLY="$only" TOLLGATE="$W/bin/tollgate" TOLLGATE_B="$REF" scripts/bench-gateway.sh 1 "$SECS")
	[ "$DRY" = 0 ] || return 0
	local c who name
	for c in allow deny; do
		for pair in tollgate:tollgate-rule-$c nginx:nginx-limit-$c ref:tollgate-b-rule-$c; do
			who=${pair%%:*} name=${pair#*:}
			put "gateway.$c.$who.rps" "$1" "$(mdrow "$name" 2 <<<"$out")"
			put "gateway.$c.$who.p99" "$1" "$(mdrow "$name" 4 <<<"$out")"
			put "gateway.$c.$who.cpu" "$1" "$(mdrow "$name" 5 <<<"$out")"
		done
	done
}

step_fauth() {
	local out
	out=$(run env TOLLGATE="$W/bin/tollgate" TOLLGATE_B="$REF" scripts/bench-forwardauth.sh 1 "$SECS")
	[ "$DRY" = 0 ] || return 0
	for pair in alone:nginx-alone floor:fa-floor tollgate:fa-tollgate ref:fa-tollgate-b; do
		put "fauth.fa.${pair%%:*}.rps" "$1" "$(mdrow "${pair#*:}" 2 <<<"$out")"
		put "fauth.fa.${pair%%:*}.p99" "$1" "$(mdrow "${pair#*:}" 3 <<<"$out")"
		put "fauth.fa.${pair%%:*}.cpu" "$1" "$(mdrow "${pair#*:}" 5 <<<"$out")"
	done
}

step_rls() {
	local raw=$W/rls.raw.$1
	: >"$raw"
	local b=()
	[ -z "$REF" ] || b=(-tollgate-b "$REF")
	run "$W/bin/rlsload" -tollgate "$W/bin/tollgate" "${b[@]}" -envoy-ratelimit "${ENVOY_RATELIMIT_BIN:-envoy-ratelimit}" \
		-rounds 1 -duration "$RLSDUR" -callers 64 -descriptors 1,3 -memory=false -raw "$raw" >/dev/null
	[ "$DRY" = 0 ] || return 0
	# server callers descriptors round per-sec p99 cpu redis-cpu
	awk -v r="$1" '{
		who = $1 == "tollgate-redis" ? "tollgate" : $1 == "tollgate-redis-b" ? "ref" : $1 == "envoy-ratelimit" ? "envoy" : ""
		if (who == "") next
		k = "rls.d" $3 "." who
		print k ".rps", r, $5; print k ".p99", r, $6; print k ".cpu", r, $7 + $8
	}' "$raw" >>"$RES"
}

REPLAYLOG=$W/access.log
# replay_figure NAME rate|cpu: from replay_speed.sh's medians line of NAME,
# "replay  wall W s (L M lines/s)   cpu C s (...)": lines per second, or
# CPU ns a line.
replay_figure() {
	awk -v name="$1" -v what="$2" -v n="$REPLAYN" '$1 == name {
		if (what == "rate" && match($0, /\( *[0-9.]+ M lines\/s/)) print substr($0, RSTART + 1, RLENGTH - 1) * 1e6
		if (what == "cpu" && match($0, /cpu +[0-9.]+ s/)) print substr($0, RSTART + 3, RLENGTH - 4) / n * 1e9
	}'
}
step_replay() {
	if [ "$DRY" = 0 ] && [ ! -f "$REPLAYLOG" ]; then
		"$W/bin/replay_gen" -n "$REPLAYN" -clients 200000 -o "$REPLAYLOG"
	elif [ "$DRY" = 1 ]; then
		run "$W/bin/replay_gen" -n "$REPLAYN" -clients 200000 -o "$REPLAYLOG"
	fi
	local who bin out
	for who in tollgate ref; do
		bin=$W/bin/tollgate
		if [ $who = ref ]; then
			[ -n "$REF" ] || continue
			bin=$REF
		fi
		out=$(run env LOG="$REPLAYLOG" RUNS=1 TOLLGATE="$bin" bench/replay_speed.sh)
		[ "$DRY" = 0 ] || continue
		# "replay  wall W s (L M lines/s)   cpu C s (...)"
		put "replay.lines.$who.rps" "$1" "$(replay_figure replay rate <<<"$out")"
		put "replay.lines.$who.cpu" "$1" "$(replay_figure replay cpu <<<"$out")"
		[ $who = ref ] || put replay.lines.cat.rps "$1" "$(replay_figure cat rate <<<"$out")"
	done
}

step_h2() {
	local out only="tollgate-h2-rule-allow caddy-reverse-proxy nginx-h2-limit-deny tollgate-h2-rule-deny nethttp-429-h2c"
	[ -z "$REF" ] || only="$only tollgate-b-h2-rule-allow tollgate-b-h2-rule-deny"
	out=$(run env ONLY="$only" TOLLGATE="$W/bin/tollgate" TOLLGATE_B="$REF" scripts/bench-h2.sh 1 "$H2N")
	[ "$DRY" = 0 ] || return 0
	for pair in allow.tollgate:tollgate-h2-rule-allow allow.caddy:caddy-reverse-proxy allow.ref:tollgate-b-h2-rule-allow \
		deny.tollgate:tollgate-h2-rule-deny deny.nginx:nginx-h2-limit-deny deny.nethttp:nethttp-429-h2c deny.ref:tollgate-b-h2-rule-deny; do
		# | name (…) | req/s | rounds | 2xx | 4xx | cpu |
		put "h2.${pair%%:*}.rps" "$1" "$(mdrow "${pair#*:}" 2 <<<"$out")"
		put "h2.${pair%%:*}.cpu" "$1" "$(mdrow "${pair#*:}" 6 <<<"$out")"
	done
}

START=$(date -u +%s)
LOADS=()
for r in $(seq "$ROUNDS"); do
	for s in $STEPS; do
		[ "$DRY" = 1 ] && echo "round $r, $s:" || echo "bench.sh: round $r/$ROUNDS: $s ($(($(date -u +%s) - START)) s, load $(cut -d' ' -f1 /proc/loadavg))" >&2
		LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
		"step_$s" "$r" || echo "bench.sh: step $s failed in round $r: its figures are left out (log: $LOG)" >&2
	done
done
# Empty values (a configuration a harness did not report) are dropped.
awk 'NF == 3 || /^#/' "$RES" >"$RES.tmp" && mv "$RES.tmp" "$RES"

LOADMED=$(printf '%s\n' "${LOADS[@]}" | median | awk '{printf "%.1f", $1}')
COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!*.md' 2>/dev/null || echo "+changes")
echo "#meta Measured $(date -u '+%Y-%m-%d %H:%M UTC') by \`scripts/bench.sh$([ "$QUICK" = 1 ] && echo " -quick") -rounds $ROUNDS\` at commit $COMMIT$([ -n "$COMPARE" ] && echo " beside $COMPARE"): medians of $ROUNDS interleaved rounds, $(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), load average $LOADMED (median over the steps; $(printf '%s\n' "${LOADS[@]}" | sort -g | head -1)–$(printf '%s\n' "${LOADS[@]}" | sort -g | tail -1)), $(($(date -u +%s) - START)) s." >>"$RES"

if [ "$DRY" = 1 ]; then
	echo
	echo "sample table (from scripts/testdata/bench-results.txt):"
	table scripts/testdata/bench-results.txt
	[ "$MISSING" = 0 ] || exit 1
	exit 0
fi

OUT=${OUT:-$W/bench-table.md}
table "$RES" | tee "$OUT"
cp "$RES" "${OUT%.md}.results"
echo "bench.sh: table in $OUT, results in ${OUT%.md}.results, log in $LOG" >&2
if [ "$WRITE" = 1 ]; then
	begin='<!-- bench.sh table -->' end='<!-- /bench.sh table -->'
	grep -qF "$begin" BENCHMARKS.md && grep -qF "$end" BENCHMARKS.md || { echo "bench.sh: BENCHMARKS.md has no $begin ... $end markers" >&2; exit 1; }
	awk -v b="$begin" -v e="$end" -v f="$OUT" '
		$0 == b {print; while ((getline l < f) > 0) print l; skip = 1; next}
		$0 == e {skip = 0}
		!skip' BENCHMARKS.md >"$W/BENCHMARKS.md" && cp "$W/BENCHMARKS.md" BENCHMARKS.md
	echo "bench.sh: BENCHMARKS.md's table replaced" >&2
fi
