# install-lib.sh: what scripts/test.sh and scripts/bench.sh install where it
# is missing (sourced, not run).

# need_debian PROG:PACKAGE...: installs, with apt-get (through sudo when not
# root), the Debian PACKAGE of each PROG not on PATH (nor in /usr/sbin).
need_debian() {
  local need=() pair prog
  for pair in "$@"; do
    prog=${pair%%:*}
    command -v "$prog" >/dev/null 2>&1 || [ -x "/usr/sbin/$prog" ] || need+=("${pair#*:}")
  done
  [ ${#need[@]} -gt 0 ] || return 0
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      echo "$(basename "$0"): missing ${need[*]}; install them (Debian: apt-get install ${need[*]}) and run again" >&2
      return 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$(basename "$0"): missing ${need[*]} and no apt-get here; install them with your package manager and run again" >&2
    return 1
  fi
  echo "$(basename "$0"): installing ${need[*]} (Debian packages)"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
}

# envoy_ratelimit: sets ENVOY_RATELIMIT_BIN to envoyproxy/ratelimit's
# service_cmd, the version the bench module pins as a tool (bench/go.mod),
# built from the Go module proxy into the user's cache (minutes the first
# time, cached after) unless ENVOY_RATELIMIT_BIN names one already. Run
# from the repository's root; fails when it does not build.
envoy_ratelimit() {
  [ -z "${ENVOY_RATELIMIT_BIN:-}" ] || return 0
  local rl="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/tollgate/envoy-ratelimit"
  (cd bench && go build -o "$rl" github.com/envoyproxy/ratelimit/src/service_cmd) || return 1
  export ENVOY_RATELIMIT_BIN="$rl"
}
