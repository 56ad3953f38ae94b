#!/bin/sh
# fleetsim_speed.sh measures `tollgate replay -fleet 1000` (issue 14): a
# generated combined-format access log replayed through 1,000 simulated
# nodes under each tier (local divided, eventual, gossip, strict) on one
# core (taskset + GOMAXPROCS=1), next to the same replay without the fleet
# in the same run, RUNS times each, interleaved. It prints each run's wall
# and CPU time (user + system). The log is generated in a temporary
# directory and removed afterwards.
#
#   bench/fleetsim_speed.sh                     # 1,000,000 lines at 10,000 lines/s, 1 run
#   RUNS=3 RATE=1000 bench/fleetsim_speed.sh    # a log ten times longer in time
#   POLICY=fixed_window:limit=100,window=1m ROUTING=regional bench/fleetsim_speed.sh
set -eu
N=${N:-1000000}
RATE=${RATE:-10000}
RUNS=${RUNS:-1}
NODES=${NODES:-1000}
POLICY=${POLICY:-fixed_window:limit=100,window=10s}
ROUTING=${ROUTING:-hash}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

(cd "$ROOT" && go build -o "$TMP/tollgate" ./cmd/tollgate)
(cd "$ROOT/bench" && go build -o "$TMP/gen" ./replay_gen)
"$TMP/gen" -n "$N" -rate "$RATE" -o "$TMP/access.log"
LOG="$TMP/access.log"
echo "log: $N lines at $RATE lines/s of log time, $(du -m "$LOG" | cut -f1) MB; $NODES nodes, $ROUTING routing, $POLICY; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

one() { # label, extra flags...
	label=$1
	shift
	/usr/bin/time -f "$label: wall %e s, cpu %U s user + %S s sys, max rss %M KB" \
		env GOMAXPROCS=1 taskset -c 0 "$TMP/tollgate" replay -progress never -policy "$POLICY" "$@" "$LOG" >"$TMP/out.txt"
}
for r in $(seq "$RUNS"); do
	one "run $r replay alone" 2>&1
	one "run $r replay -fleet $NODES" -fleet "$NODES" -fleet-routing "$ROUTING" 2>&1
	sed -n '/^Fleet of/,$p' "$TMP/out.txt"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
