#!/bin/sh
# redis_rounds.sh runs BenchmarkRedisDecisions (issue 27 item 4) at 64
# callers (CALLERS: 1, 16 or 64): tollgate's strict tier and
# go-redis/redis_rate v10 on one redis-server, alternating in ROUNDS
# rounds (one test process a round, tollgate first), RUNS times. Per run
# it prints each side's median decisions/s, p99 latency and redis-server
# CPU per decision (INFO cpu, user + system), the ratio of the medians,
# and the load average before the run.
#
#   bench/redis_rounds.sh            # 5 runs of 5 rounds, 20,000 decisions each
#   RUNS=1 ROUNDS=3 N=10000 CALLERS=16 bench/redis_rounds.sh
#   BASE=74b6d26 bench/redis_rounds.sh   # also tollgate built at BASE, same rounds
set -eu
RUNS=${RUNS:-5}
ROUNDS=${ROUNDS:-5}
N=${N:-20000}
CALLERS=${CALLERS:-64}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

(cd "$ROOT/bench" && go test -c -o "$TMP/now.test" .)
IMPLS="tollgate redis_rate"
if [ -n "${BASE:-}" ]; then
	# The same benchmark file on the store of BASE.
	mkdir "$TMP/base"
	git -C "$ROOT" archive "$BASE" | tar -x -C "$TMP/base"
	cp "$ROOT/bench/redis_test.go" "$TMP/base/bench/"
	(cd "$TMP/base/bench" && go test -c -o "$TMP/base.test" .)
	IMPLS="tollgate redis_rate base"
fi

# one IMPL: runs one round of one side, printing "decisions/s cpu-µs".
one() {
	bin=$TMP/now.test impl=$1
	if [ "$1" = base ]; then bin=$TMP/base.test impl=tollgate; fi
	(cd "$ROOT/bench" && "$bin" -test.run XXX -test.benchtime "${N}x" \
		-test.bench "RedisDecisions/impl=$impl\$/callers=$CALLERS\$") |
		awk '/^BenchmarkRedisDecisions/ {
			for (i = 2; i <= NF; i++) {
				if ($i == "decisions/s") r = $(i-1)
				if ($i == "redis-cpu-µs/decision") c = $(i-1)
				if ($i == "p99-µs") p = $(i-1)
			}
			print r, c, p }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2 }'; }

for run in $(seq "$RUNS"); do
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	for round in $(seq "$ROUNDS"); do
		for impl in $IMPLS; do
			one "$impl" | sed "s/^/$impl /" >>"$TMP/run$run"
		done
	done
	line="run $run (load $load):"
	for impl in $IMPLS; do
		rate=$(awk -v i="$impl" '$1 == i { print $2 }' "$TMP/run$run" | median)
		cpu=$(awk -v i="$impl" '$1 == i { print $3 }' "$TMP/run$run" | median)
		p99=$(awk -v i="$impl" '$1 == i { print $4 }' "$TMP/run$run" | median)
		all=$(awk -v i="$impl" '$1 == i { printf "%s%.0f", s, $2; s = " " }' "$TMP/run$run")
		eval "rate_$impl=$rate"
		line="$line $impl $(printf '%.0f' "$rate")/s, p99 $(printf '%.0f' "$p99") µs, Redis $(printf '%.2f' "$cpu") µs/decision [$all];"
	done
	echo "$line ratio $(awk -v a="$rate_tollgate" -v b="$rate_redis_rate" 'BEGIN { printf "%.2f", a / b }')×"
done
