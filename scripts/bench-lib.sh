# bench-lib.sh: helpers shared by the load scripts (sourced, not run).

# need_tools WHO TOOL...: exits, naming WHO, when a TOOL is not installed.
need_tools() {
	local who=$1 tool
	shift
	for tool in "$@"; do
		command -v "$tool" >/dev/null || { echo "$who: $tool is not installed" >&2; exit 1; }
	done
}

# stop_servers: kills the processes in PIDS and those named by the pid
# files under $RUN/*/ (nginx's masters), and waits for them.
stop_servers() {
	local p f
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for f in "$RUN"/*/*.pid; do [ -f "$f" ] && kill "$(cat "$f" 2>/dev/null)" 2>/dev/null || true; done
	wait 2>/dev/null || true
}

# only_configs: when ONLY is set ("name ..."), keeps in CONFIGS (entries
# "name port ...") only those it names.
only_configs() {
	[ -n "${ONLY:-}" ] || return 0
	local kept=() c
	for c in "${CONFIGS[@]}"; do
		case " $ONLY " in *" ${c%% *} "*) kept+=("$c") ;; esac
	done
	CONFIGS=("${kept[@]}")
}

# cputicks PID: CPU clock ticks (user + system) used so far by PID and its
# children (nginx's workers).
cputicks() {
	local t=0 p
	for p in "$1" $(pgrep -P "$1"); do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}

# median: the median of the numbers on standard input, one a line.
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# ports_free PORT...: fails, naming it, when something already listens on
# one of the 127.0.0.1 PORTs (another run's server would be measured instead).
ports_free() {
	local p
	for p in "$@"; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$(basename "$0"): 127.0.0.1:$p is in use by another process" >&2
			return 1
		fi
	done
}

# start_origin PORT: nginx answering 200 "ok" on 127.0.0.1:PORT (from
# $EDGE/nginx-origin.conf.in, under $RUN/origin), recorded in PIDS and
# PIDOF[PORT].
start_origin() {
	mkdir -p "$RUN/origin/tmp"
	sed -e "s|@RUN@|$RUN/origin|g" -e "s|127.0.0.1:18081|127.0.0.1:$1|" "$EDGE/nginx-origin.conf.in" >"$RUN/origin/nginx.conf"
	nginx -c "$RUN/origin/nginx.conf" -p "$RUN/origin/" -g 'daemon off;' &
	PIDS+=($!)
	PIDOF[$1]=$!
}

# build_tollgate DEST: the tollgate binary the load scripts measure, at
# DEST: a copy of $TOLLGATE when that names a built one (scripts/bench.sh
# builds it once, and a second commit's as $TOLLGATE_B), else built from
# this tree.
build_tollgate() {
	if [ -n "${TOLLGATE:-}" ]; then
		cp "$TOLLGATE" "$1"
	else
		(cd "$ROOT" && go build -o "$1" ./cmd/tollgate)
	fi
}

# start_tollgate NAME PORT UPSTREAM-PORT LISTEN-EXTRA RULES-YAML: writes
# $RUN/tollgate-NAME.yaml (a listener on 127.0.0.1:PORT with LISTEN-EXTRA
# added to its mapping, no admin listener, one route to the origin on
# 127.0.0.1:UPSTREAM-PORT, then RULES-YAML), checks it and starts
# $RUN/tollgate (or $TGBIN when set) on it, recording the process in PIDS and PIDOF[PORT].
start_tollgate() {
	cat >"$RUN/tollgate-$1.yaml" <<YAML
listen: {addr: "127.0.0.1:$2"$4}
admin: {addr: "off"}
reload: {watch: false}
upstream: {max_conns: 512}
routes: [{path: /, upstream: "http://127.0.0.1:$3"}]
$5
YAML
	"${TGBIN:-$RUN/tollgate}" check -q "$RUN/tollgate-$1.yaml"
	"${TGBIN:-$RUN/tollgate}" serve -config "$RUN/tollgate-$1.yaml" -log-level error &
	PIDS+=($!)
	PIDOF[$2]=$!
}
