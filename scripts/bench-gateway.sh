#!/usr/bin/env bash
# bench-gateway.sh: tollgate's gateway against nginx (and a plain net/http
# httputil.ReverseProxy) on loopback, all proxying to the same nginx origin,
# measured with wrk in interleaved rounds; prints medians as a Markdown table.
# Besides throughput and latency it records the CPU time the server process
# (with its children: nginx's workers) spent per request, which a shared,
# noisy machine disturbs much less than throughput.
#
#   scripts/bench-gateway.sh [ROUNDS] [SECONDS]     defaults: 3 rounds of 5 s
#
# ONLY="nginx-limit-deny tollgate-rule-deny" measures only the named
# configurations (all servers still start); CONNS sets wrk's connections.
# SYSCALLS=1 adds a pass that counts each server's system calls per
# request with perf's syscall tracepoints (needs perf and root).
# EVENTLOOP=1 adds a static 429 served from gnet's event loops, and two
# bare proxies on gnet's event loops (gnet-proxy, gnet-proxy-safe).
#
# Needs: go, wrk, nginx (Debian nginx-light). Everything listens on
# 127.0.0.1:18081-18099 and is stopped on exit. The peer configurations come
# from the templates in scripts/nginx, or from $EDGE.
set -euo pipefail

ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${CONNS:-64}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
EDGE=${EDGE:-$ROOT/scripts/nginx}
[ -f "$EDGE/nginx-proxy.conf.in" ] || { echo "$(basename "$0"): no nginx templates in $EDGE" >&2; exit 1; }
RUN=$(mktemp -d /tmp/bench-gateway.XXXXXX)
PIDS=()
declare -A PIDOF # port -> process id of the server on it (nginx: the master)

cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for f in "$RUN"/*/*.pid; do [ -f "$f" ] && kill "$(cat "$f" 2>/dev/null)" 2>/dev/null || true; done
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
PIDOF[18081]=$!

# --- nginx as the proxy: plain, never refusing, refusing --------------------
nginx_proxy() { # name port zone req
	local d="$RUN/nginx-$1"
	mkdir -p "$d/tmp"
	sed -e "s|@RUN@|$d|g" -e "s|@WORKERS@|2|" -e "s|18080|$2|" \
		-e "s|@LIMIT_ZONE@|$3|" -e "s|@LIMIT_REQ@|$4|" \
		"$EDGE/nginx-proxy.conf.in" >"$d/nginx.conf"
	nginx -c "$d/nginx.conf" -p "$d/" -g 'daemon off;' &
	PIDS+=($!)
	PIDOF[$2]=$!
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
	PIDOF[$2]=$!
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
			hd["X-Content-Type-Options"] = []string{"nosniff"}
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
PIDOF[18095]=$!
"$RUN/stdproxy/stdproxy" -addr 127.0.0.1:18096 -deny &
PIDS+=($!)
PIDOF[18096]=$!

# --- baseline: a bare fasthttp HostClient proxy and a fasthttp handler ------
# answering the same 429: the stack's own cost, without tollgate's work.
mkdir -p "$RUN/fastpeer"
fhver=$(cd "$ROOT" && go list -m -f '{{.Version}}' github.com/valyala/fasthttp)
cat >"$RUN/fastpeer/go.mod" <<MOD
module fastpeer

go 1.26

require github.com/valyala/fasthttp $fhver
MOD
cp "$ROOT/go.sum" "$RUN/fastpeer/go.sum"
cat >"$RUN/fastpeer/main.go" <<'GO'
// fastpeer is the fasthttp baseline: a bare HostClient proxy with upstream
// keep-alive, or (-deny) a handler answering 429 with the same header
// fields and problem body tollgate writes.
package main

import (
	"flag"
	"log"

	"github.com/valyala/fasthttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18097", "listen address")
	deny := flag.Bool("deny", false, "answer 429 to everything")
	flag.Parse()
	c := &fasthttp.HostClient{Addr: "127.0.0.1:18081", MaxConns: 512}
	body := []byte(`{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"retry in 3600 seconds","violated-policies":["per-ip"]}`)
	h := func(ctx *fasthttp.RequestCtx) {
		if err := c.Do(&ctx.Request, &ctx.Response); err != nil {
			ctx.Error("bad gateway", 502)
		}
	}
	if *deny {
		h = func(ctx *fasthttp.RequestCtx) {
			ctx.SetStatusCode(429)
			hd := &ctx.Response.Header
			hd.Set("Ratelimit-Policy", `"per-ip";q=1;w=3600`)
			hd.Set("Ratelimit", `"per-ip";r=0;t=3600`)
			hd.Set("Retry-After", "3600")
			hd.Set("Cache-Control", "no-store")
			hd.Set("X-Content-Type-Options", "nosniff")
			hd.SetContentType("application/problem+json")
			ctx.SetBody(body)
		}
	}
	log.Fatal(fasthttp.ListenAndServe(*addr, h))
}
GO
if (cd "$RUN/fastpeer" && GOFLAGS=-mod=mod go build -o fastpeer . 2>"$RUN/fastpeer/build.log"); then
	"$RUN/fastpeer/fastpeer" -addr 127.0.0.1:18097 &
	PIDS+=($!)
	PIDOF[18097]=$!
	"$RUN/fastpeer/fastpeer" -addr 127.0.0.1:18098 -deny &
	PIDS+=($!)
	PIDOF[18098]=$!
else
	echo "bench-gateway: fasthttp baseline did not build, skipped:" >&2
	cat "$RUN/fastpeer/build.log" >&2
fi

# --- optional baseline: the same 429 from an event loop (gnet) -----------
# EVENTLOOP=1: a Go server that, like nginx, reads a socket only when epoll
# reports it ready (one read per request instead of fasthttp's two),
# answering the same static 429; and two bare proxies on event loops
# (proxy.go below). They need github.com/panjf2000/gnet/v2 from the
# module proxy.
if [ "${EVENTLOOP:-}" = 1 ]; then
	mkdir -p "$RUN/gnetpeer"
	cat >"$RUN/gnetpeer/go.mod" <<'MOD'
module gnetpeer

go 1.26

require (
	github.com/panjf2000/gnet/v2 v2.9.7
	github.com/valyala/fasthttp v1.78.0
)
MOD
	cat >"$RUN/gnetpeer/main.go" <<'GO'
// gnetpeer answers every request with the same 429 as the fasthttp
// baseline, on gnet's event loops.
package main

import (
	"bytes"
	"flag"
	"log"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
)

var (
	body = []byte(`{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"retry in 3600 seconds","violated-policies":["per-ip"]}`)
	date atomic.Pointer[string]
)

type server struct{ gnet.BuiltinEventEngine }

// OnTraffic answers each complete request head in the buffer (the
// benchmark's requests have no body).
func (*server) OnTraffic(c gnet.Conn) gnet.Action {
	buf, _ := c.Peek(-1)
	used := 0
	out := make([]byte, 0, 512)
	for {
		i := bytes.Index(buf, []byte("\r\n\r\n"))
		if i < 0 {
			break
		}
		buf, used = buf[i+4:], used+i+4
		out = append(out, "HTTP/1.1 429 Too Many Requests\r\nServer: gnetpeer\r\nDate: "...)
		out = append(out, *date.Load()...)
		out = append(out, "\r\nContent-Type: application/problem+json\r\nContent-Length: "...)
		out = strconv.AppendInt(out, int64(len(body)), 10)
		out = append(out, "\r\nRatelimit-Policy: \"per-ip\";q=1;w=3600\r\nRatelimit: \"per-ip\";r=0;t=3600\r\nRetry-After: 3600\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\r\n"...)
		out = append(out, body...)
	}
	if used > 0 {
		c.Discard(used) // Discard(0) would drop a partial head
	}
	if len(out) > 0 {
		c.Write(out)
	}
	return gnet.None
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18099", "listen address")
	proxy := flag.Bool("proxy", false, "proxy to the origin instead (proxy.go)")
	safe := flag.Bool("safe", false, "with -proxy: write through the loop owning the socket")
	flag.Parse()
	if *proxy {
		log.Fatal(runProxy(*addr, *safe))
	}
	setDate := func() {
		d := time.Now().UTC().Format(http.TimeFormat)
		date.Store(&d)
	}
	setDate()
	go func() {
		for range time.Tick(time.Second) {
			setDate()
		}
	}()
	log.Fatal(gnet.Run(&server{}, "tcp://"+*addr, gnet.WithMulticore(true)))
}
GO
	# Two proxies on event loops, the ceiling of that design for the
	# proxy comparison. Each client connection gets its own keep-alive
	# connection to the origin, registered with a gnet client's event
	# loops; a request goes upstream and its response back with no
	# goroutine in between. They parse and rewrite each message with
	# fasthttp (as tollgate does) and forward heads and Content-Length
	# bodies only: enough for this benchmark, not a product.
	# - gnet-proxy writes to the other connection's socket directly from
	#   whichever loop holds the message: nginx's cost, but the socket
	#   may belong to another loop, which can close it meanwhile (and the
	#   descriptor number be reused): unsafe outside a benchmark.
	# - gnet-proxy-safe hands each message to the loop owning the
	#   destination (AsyncWrite: a queue and a wake-up), which is what a
	#   product on gnet would have to do.
	cat >"$RUN/gnetpeer/proxy.go" <<'GO'
package main

import (
	"bufio"
	"bytes"
	"log"

	"github.com/panjf2000/gnet/v2"
	"github.com/valyala/fasthttp"
	"golang.org/x/sys/unix"
)

// pair is a client connection and its own upstream connection.
type pair struct {
	client, up gnet.Conn
	req        fasthttp.Request
	resp       fasthttp.Response
	rd         bytes.Reader
	br         *bufio.Reader
	out        bytes.Buffer
	bw         *bufio.Writer
}

type proxyFront struct {
	gnet.BuiltinEventEngine
	cli  *gnet.Client
	safe bool
}

type proxyBack struct {
	gnet.BuiltinEventEngine
	safe bool
}

// send writes msg to c: from this loop into c's socket, or through c's
// own loop when safe.
func send(c gnet.Conn, msg []byte, safe bool) {
	if safe {
		c.AsyncWrite(append([]byte(nil), msg...), nil)
		return
	}
	for len(msg) > 0 {
		n, err := unix.Write(c.Fd(), msg)
		if err != nil {
			log.Print(err)
			return
		}
		msg = msg[n:]
	}
}

func (f *proxyFront) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	p := &pair{client: c}
	p.br = bufio.NewReaderSize(&p.rd, 4096)
	p.bw = bufio.NewWriterSize(&p.out, 4096)
	up, err := f.cli.DialContext("tcp", "127.0.0.1:18081", p)
	if err != nil {
		log.Print(err)
		return nil, gnet.Close
	}
	p.up = up
	c.SetContext(p)
	return nil, gnet.None
}

func (f *proxyFront) OnClose(c gnet.Conn, _ error) gnet.Action {
	if p, ok := c.Context().(*pair); ok {
		p.up.Close()
	}
	return gnet.None
}

// OnTraffic forwards a complete request head upstream (the benchmark's
// requests have no body and are not pipelined).
func (f *proxyFront) OnTraffic(c gnet.Conn) gnet.Action {
	p := c.Context().(*pair)
	buf, _ := c.Peek(-1)
	i := bytes.Index(buf, []byte("\r\n\r\n"))
	if i < 0 {
		return gnet.None
	}
	p.rd.Reset(buf[:i+4])
	p.br.Reset(&p.rd)
	if err := p.req.Read(p.br); err != nil {
		return gnet.Close
	}
	c.Discard(i + 4)
	p.req.Header.Set("X-Forwarded-For", "127.0.0.1")
	p.out.Reset()
	p.bw.Reset(&p.out)
	p.req.Write(p.bw)
	p.bw.Flush()
	send(p.up, p.out.Bytes(), f.safe)
	return gnet.None
}

// OnTraffic sends a complete response back to the client.
func (b *proxyBack) OnTraffic(u gnet.Conn) gnet.Action {
	p := u.Context().(*pair)
	buf, _ := u.Peek(-1)
	p.rd.Reset(buf)
	p.br.Reset(&p.rd)
	if err := p.resp.Read(p.br); err != nil {
		return gnet.None // not complete yet
	}
	u.Discard(len(buf) - p.rd.Len() - p.br.Buffered())
	p.out.Reset()
	p.bw.Reset(&p.out)
	p.resp.Write(p.bw)
	p.bw.Flush()
	send(p.client, p.out.Bytes(), b.safe)
	return gnet.None
}

func runProxy(addr string, safe bool) error {
	cli, err := gnet.NewClient(&proxyBack{safe: safe}, gnet.WithMulticore(true))
	if err != nil {
		return err
	}
	if err := cli.Start(); err != nil {
		return err
	}
	return gnet.Run(&proxyFront{cli: cli, safe: safe}, "tcp://"+addr, gnet.WithMulticore(true))
}
GO
	if (cd "$RUN/gnetpeer" && GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 && GOFLAGS=-mod=mod go build -o gnetpeer . 2>"$RUN/gnetpeer/build.log"); then
		"$RUN/gnetpeer/gnetpeer" -addr 127.0.0.1:18099 </dev/null &
		PIDS+=($!)
		PIDOF[18099]=$!
		"$RUN/gnetpeer/gnetpeer" -addr 127.0.0.1:18093 -proxy </dev/null &
		PIDS+=($!)
		PIDOF[18093]=$!
		"$RUN/gnetpeer/gnetpeer" -addr 127.0.0.1:18094 -proxy -safe </dev/null &
		PIDS+=($!)
		PIDOF[18094]=$!
	else
		echo "bench-gateway: gnet baseline did not build, skipped:" >&2
		cat "$RUN/gnetpeer/build.log" >&2
	fi
fi

. "$ROOT/scripts/bench-lib.sh" # cputicks, median
HZ=$(getconf CLK_TCK)

# Wait for every port.
for port in "${!PIDOF[@]}"; do
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
if [ -n "${PIDOF[18097]:-}" ]; then
	CONFIGS+=("fasthttp-hostclient-proxy 18097" "fasthttp-429 18098")
fi
if [ -n "${PIDOF[18099]:-}" ]; then
	CONFIGS+=("gnet-429 18099" "gnet-proxy 18093" "gnet-proxy-safe 18094")
fi

if [ -n "${ONLY:-}" ]; then
	kept=()
	for c in "${CONFIGS[@]}"; do
		case " $ONLY " in *" ${c%% *} "*) kept+=("$c") ;; esac
	done
	CONFIGS=("${kept[@]}")
fi

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
		t0=$(cputicks "${PIDOF[$2]}")
		out=$(wrk -t2 -c"$CONNS" -d"${SECS}s" --latency "http://127.0.0.1:$2/")
		t1=$(cputicks "${PIDOF[$2]}")
		rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
		nreq=$(awk '/requests in/ {print $1}' <<<"$out")
		cpu=$(awk -v a="$t0" -v b="$t1" -v n="$nreq" -v hz="$HZ" 'BEGIN {printf "%.1f", (b - a) / hz * 1e6 / n}')
		p50=$(awk '$1=="50%" {print $2}' <<<"$out")
		p99=$(awk '$1=="99%" {print $2}' <<<"$out")
		non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$out")
		echo "$1 $r $rps $p50 $p99 ${non2xx:-0} $cpu" >>"$RES"
		echo "# round $r $1: $rps req/s, p50 $p50, p99 $p99, non-2xx ${non2xx:-0}, server CPU $cpu µs/req" >&2
	done
done

# Medians (ROUNDS values each) as a Markdown table.
to_us() { # wrk latency (123.45us, 1.23ms, 1.2s) to microseconds
	awk -v v="$1" 'BEGIN {
		n = v + 0
		if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else if (v ~ /s$/) print n * 1000000; else print n
	}'
}
echo
echo "| configuration | req/s (median of $ROUNDS) | p50 µs | p99 µs | server CPU µs/req | all req/s |"
echo "| --- | ---: | ---: | ---: | ---: | --- |"
for c in "${CONFIGS[@]}"; do
	set -- $c
	rps=$(awk -v n="$1" '$1 == n {print $3}' "$RES" | median)
	p50=$(awk -v n="$1" '$1 == n {print $4}' "$RES" | while read -r v; do to_us "$v"; done | median)
	p99=$(awk -v n="$1" '$1 == n {print $5}' "$RES" | while read -r v; do to_us "$v"; done | median)
	cpu=$(awk -v n="$1" '$1 == n {print $7}' "$RES" | median)
	all=$(awk -v n="$1" '$1 == n {printf "%s%.0f", sep, $3; sep = ", "}' "$RES")
	printf "| %s | %.0f | %.0f | %.0f | %.1f | %s |\n" "$1" "$rps" "$p50" "$p99" "$cpu" "$all"
done

# Paired ratios: each round's A/B from the same round (measured seconds
# apart), median over the rounds; throughput, and CPU efficiency (B's CPU
# per request over A's: above 1 means A spends less).
echo
echo "| A vs B (median of per-round ratios) | req/s A/B | CPU efficiency A vs B |"
echo "| --- | ---: | ---: |"
for pair in tollgate-rule-allow/tollgate-norule tollgate-rule-allow/nginx-limit-allow \
	tollgate-norule/nginx-plain tollgate-rule-deny/nginx-limit-deny \
	tollgate-norule/nethttp-reverseproxy tollgate-rule-deny/nethttp-429 \
	tollgate-norule/fasthttp-hostclient-proxy tollgate-rule-deny/fasthttp-429 \
	fasthttp-hostclient-proxy/nginx-plain fasthttp-429/nginx-limit-deny \
	gnet-429/nginx-limit-deny gnet-429/fasthttp-429 \
	gnet-proxy/nginx-plain gnet-proxy-safe/nginx-plain \
	gnet-proxy/fasthttp-hostclient-proxy gnet-proxy-safe/fasthttp-hostclient-proxy; do
	a=${pair%/*} b=${pair#*/}
	grep -q "^$b " "$RES" && grep -q "^$a " "$RES" || continue
	rr=$(awk -v a="$a" -v b="$b" '$1 == a {x[$2] = $3} $1 == b {y[$2] = $3} END {for (r in x) if (y[r] > 0) print x[r] / y[r]}' "$RES" | median)
	cr=$(awk -v a="$a" -v b="$b" '$1 == a {x[$2] = $7} $1 == b {y[$2] = $7} END {for (r in x) if (x[r] > 0) print y[r] / x[r]}' "$RES" | median)
	printf "| %s vs %s | %.2f | %.2f |\n" "$a" "$b" "$rr" "$cr"
done

# System calls per request: one 3 s wrk run per configuration under
# perf stat's syscall tracepoints (which slow the server down: only the
# counts per request are meant here, not the throughput).
if [ "${SYSCALLS:-}" = 1 ]; then
	command -v perf >/dev/null || { echo "bench-gateway: SYSCALLS=1 needs perf" >&2; exit 1; }
	events=raw_syscalls:sys_enter
	for e in read recvfrom write writev epoll_wait epoll_pwait futex nanosleep; do
		events+=",syscalls:sys_enter_$e"
	done
	echo
	echo "| configuration | all | read+recvfrom | write+writev | epoll | futex+nanosleep |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: |"
	for c in "${CONFIGS[@]}"; do
		set -- $c
		pids=$(echo "${PIDOF[$2]}" $(pgrep -P "${PIDOF[$2]}") | tr ' ' ',')
		perf stat -x, -e "$events" -p "$pids" -o "$RUN/perf.$2" -- sleep 3.3 &
		perfpid=$!
		sleep 0.1
		nreq=$(wrk -t2 -c"$CONNS" -d3s "http://127.0.0.1:$2/" | awk '/requests in/ {print $1}')
		wait "$perfpid"
		awk -F, -v n="$nreq" -v name="$1" '/^[0-9]/ {
			split($3, a, "sys_enter_"); k = a[2]; if ($3 ~ /^raw_/) k = "all"
			v[k] = $1
		} END {
			printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", name, v["all"] / n,
				(v["read"] + v["recvfrom"]) / n, (v["write"] + v["writev"]) / n,
				(v["epoll_wait"] + v["epoll_pwait"]) / n, (v["futex"] + v["nanosleep"]) / n
		}' "$RUN/perf.$2"
	done
fi
