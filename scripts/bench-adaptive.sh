#!/usr/bin/env bash
# The adaptive limits' flash-crowd benchmark (bench/flashcrowd): the
# origin simulator behind the gateway, a normal rate then ten times it,
# four configurations one after the other in one run (static token
# bucket, the same bucket scaled by an adaptive controller, a concurrency
# limit scaled by it, a route's adaptive_concurrency gradient
# controller). Prints the figures and the load average, writes
# bench/out/flashcrowd/{results.json,chart.svg}; with -commit, copies the
# chart to docs/adaptive-flash-crowd.svg (linked from BENCHMARKS.md).
# Usage: scripts/bench-adaptive.sh [-commit] [flashcrowd flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
commit=false
if [ "${1:-}" = "-commit" ]; then commit=true; shift; fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
(cd bench && go run ./flashcrowd -out out/flashcrowd "$@")
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if $commit; then
  cp bench/out/flashcrowd/chart.svg docs/adaptive-flash-crowd.svg
  echo "chart: docs/adaptive-flash-crowd.svg"
fi
