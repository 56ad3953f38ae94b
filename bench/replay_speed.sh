#!/bin/sh
# replay_speed.sh measures `tollgate replay` (issue 6) on a generated
# combined-format access log: lines per second parsed and simulated against
# five policies on one core (taskset + GOMAXPROCS=1), next to `cat FILE >
# /dev/null` and `wc -l FILE` on the same file in the same run, RUNS times
# each, interleaved. The log is generated in a temporary directory and
# removed afterwards.
#
#   bench/replay_speed.sh            # 10,000,000 lines, 200,000 clients, 3 runs
#   N=1000000 RUNS=5 CLIENTS=10000 bench/replay_speed.sh
#   EXTRA="-max-keys 50000" bench/replay_speed.sh   # more replay flags
#   LOG=/tmp/access.log TOLLGATE=/tmp/tollgate bench/replay_speed.sh  # that log (N its lines), that binary
set -eu
N=${N:-10000000}
RUNS=${RUNS:-3}
CLIENTS=${CLIENTS:-200000}
EXTRA=${EXTRA:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

if [ -n "${TOLLGATE:-}" ]; then
	cp "$TOLLGATE" "$TMP/tollgate"
else
	(cd "$ROOT" && go build -o "$TMP/tollgate" ./cmd/tollgate)
fi
if [ -n "${LOG:-}" ]; then
	N=$(wc -l <"$LOG")
else
	(cd "$ROOT/bench" && go build -o "$TMP/gen" ./replay_gen)
	"$TMP/gen" -n "$N" -clients "$CLIENTS" -o "$TMP/access.log"
	LOG="$TMP/access.log"
fi
echo "log: $N lines from a population of $CLIENTS clients, $(du -m "$LOG" | cut -f1) MB, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# The five algorithms, one policy each (the sliding window also runs its
# exact sliding log shadow, for the accuracy figure).
set -- -policy token_bucket:rate=10/s,burst=20 \
	-policy leaky_bucket:rate=10/s,burst=10,mode=police \
	-policy fixed_window:limit=100,window=1m \
	-policy sliding_window:limit=100,window=1m \
	-policy sliding_log:limit=100,window=1m
# shellcheck disable=SC2086 # EXTRA is a list of flags
set -- "$@" $EXTRA
echo "replay flags: $*"

measure() { # name command...: prints "name wall user+sys maxrss_kb"
	name=$1
	shift
	/usr/bin/time -f "%e %U %S %M" -o "$TMP/time" "$@" >/dev/null
	awk -v n="$name" '{ printf "%s %.2f %.2f %d\n", n, $1, $2 + $3, $4 }' "$TMP/time"
}

: >"$TMP/results"
i=0
while [ "$i" -lt "$RUNS" ]; do
	measure cat sh -c "cat '$LOG' > /dev/null" >>"$TMP/results"
	measure wc wc -l "$LOG" >>"$TMP/results"
	measure replay taskset -c 0 env GOMAXPROCS=1 "$TMP/tollgate" replay -progress never "$@" "$LOG" >>"$TMP/results"
	i=$((i + 1))
done
"$TMP/tollgate" replay -progress never "$@" "$LOG" | head -3

echo
echo "runs (name wall_s cpu_s maxrss_KB):"
cat "$TMP/results"
echo
echo "medians of $RUNS runs:"
median() { # column: the median of that column over the runs of $name
	grep "^$name " "$TMP/results" | awk -v c="$1" '{ print $c }' | sort -n | awk -v r="$RUNS" 'NR == int((r + 1) / 2)'
}
for name in cat wc replay; do
	wall=$(median 2)
	cpu=$(median 3)
	rss=$(median 4)
	awk -v name="$name" -v n="$N" -v w="$wall" -v c="$cpu" -v m="$rss" 'BEGIN {
		printf "%-7s wall %6.2f s (%6.2f M lines/s)   cpu %6.2f s (%6.2f M lines/cpu-s)   max RSS %4d MB\n",
			name, w, n / (w > 0 ? w : 0.005) / 1e6, c, n / (c > 0 ? c : 0.005) / 1e6, m / 1024 }'
done
