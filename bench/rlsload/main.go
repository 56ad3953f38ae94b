// Command rlsload measures Envoy rate limit services the way ghz would:
// a real grpc-go client calls envoy.service.ratelimit.v3's ShouldRateLimit
// from 1, 16 and 64 concurrent callers, with one and three descriptors per
// request, and reports the decisions answered per second, p50 and p99
// latency, each server's CPU per decision and its memory (RSS).
//
// It starts one redis-server (no persistence) on a free loopback port and
// three servers on the same configuration directory (one domain, shaped as
// envoyproxy/ratelimit's own examples):
//
//	tollgate-redis   tollgate envoy-rls -redis (strict tier)
//	envoy-ratelimit  envoyproxy/ratelimit's service_cmd, REDIS_URL, its defaults
//	tollgate-memory  tollgate envoy-rls, in memory (an extra row)
//
// The two Redis servers share the one redis-server, and even its keys
// (tollgate counts under envoyproxy/ratelimit's); redis-server's CPU is
// measured over each server's cell in turn, and the report gives
// tollgate's server plus Redis CPU per call over envoyproxy/ratelimit's,
// round by round. Each round measures
// every cell (callers × descriptors) on every server, the servers' order
// rotated from round to round; the report gives each figure's median over
// the rounds and the ratio of tollgate-redis to envoy-ratelimit. The
// limits are high enough that every decision is an allowed one (the path
// both servers take to Redis each time); a request answered OVER_LIMIT or
// with an error is counted and reported. Every run is bounded: -duration
// per cell, -rounds rounds.
//
//	go build -o /tmp/rls/tollgate ./cmd/tollgate
//	cd bench && go build -o /tmp/rls/service_cmd github.com/envoyproxy/ratelimit/src/service_cmd # pinned in go.mod as a tool
//	go run ./rlsload -tollgate /tmp/rls/tollgate -envoy-ratelimit /tmp/rls/service_cmd
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is the one domain both servers read: a limit per client address,
// one per path, and a nested user → plan limit, each far above what the
// load reaches in its window.
const config = `domain: bench
descriptors:
  - key: remote_address
    rate_limit:
      unit: hour
      requests_per_unit: 4000000000
  - key: path
    rate_limit:
      unit: hour
      requests_per_unit: 4000000000
  - key: user
    descriptors:
      - key: plan
        value: pro
        rate_limit:
          unit: hour
          requests_per_unit: 4000000000
`

func main() {
	tollgate := flag.String("tollgate", "", "`path` of the tollgate binary (go build ./cmd/tollgate)")
	tollgateB := flag.String("tollgate-b", "", "`path` of a second tollgate binary, measured on Redis as tollgate-redis-b (an A/B of a change)")
	peer := flag.String("envoy-ratelimit", "", "`path` of envoyproxy/ratelimit's service_cmd; empty measures tollgate alone")
	peerEnv := flag.String("peer-env", "", "extra environment for envoyproxy/ratelimit, `K=V,K=V` (e.g. REDIS_PIPELINE_WINDOW=150us,REDIS_PIPELINE_LIMIT=8)")
	rounds := flag.Int("rounds", 5, "rounds; figures are medians over them")
	duration := flag.Duration("duration", 3*time.Second, "load per cell and server")
	callers := flag.String("callers", "1,16,64", "concurrent callers, comma-separated")
	descs := flag.String("descriptors", "1,3", "descriptors per request, comma-separated (1 to 3)")
	keys := flag.Int("keys", 1000, "distinct clients (remote_address and user values)")
	conns := flag.Int("conns", 1, "gRPC connections per server, shared by the callers (ghz's default is 1)")
	memory := flag.Bool("memory", true, "measure tollgate in memory too")
	profile := flag.String("profile", "", "`prefix` of CPU profiles of each tollgate server, taken in the first round at the most callers and descriptors (PREFIX-SERVER.pprof)")
	raw := flag.String("raw", "", "`file` to append each measurement to, one a line: server callers descriptors round per-sec p99-µs server-CPU-µs Redis-CPU-µs (scripts/bench.sh reads it)")
	flag.Parse()
	if *tollgate == "" {
		fmt.Fprintln(os.Stderr, "rlsload: -tollgate is required")
		os.Exit(2)
	}
	cs, err := ints(*callers)
	if err == nil {
		var ds []int
		ds, err = ints(*descs)
		if err == nil {
			err = run(plan{
				tollgate: *tollgate, tollgateB: *tollgateB, peer: *peer, peerEnv: *peerEnv, memory: *memory,
				rounds: *rounds, duration: *duration, callers: cs, descriptors: ds, keys: *keys, conns: *conns, profile: *profile, raw: *raw,
			})
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rlsload: %v\n", err)
		os.Exit(1)
	}
}

// plan is what one run measures.
type plan struct {
	tollgate, tollgateB  string
	peer, peerEnv        string
	memory               bool
	rounds               int
	duration             time.Duration
	callers, descriptors []int
	keys, conns          int
	profile              string
	raw                  string
}

func run(p plan) error {
	for _, d := range p.descriptors {
		if d < 1 || d > 3 {
			return fmt.Errorf("-descriptors: %d is not within 1 to 3", d)
		}
	}
	dir, err := os.MkdirTemp("", "rlsload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	confDir := filepath.Join(dir, "rl", "config")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(confDir, "bench.yaml"), []byte(config), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	redis, err := startRedis(ctx, dir)
	if err != nil {
		return err
	}
	defer redis.stop()

	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	add := func(s *server, err error) error {
		if err != nil {
			return err
		}
		servers = append(servers, s)
		return nil
	}
	if err := add(startTollgate(ctx, "tollgate-redis", p.tollgate, confDir, redis.addr)); err != nil {
		return err
	}
	if p.tollgateB != "" {
		if err := add(startTollgate(ctx, "tollgate-redis-b", p.tollgateB, confDir, redis.addr)); err != nil {
			return err
		}
	}
	if p.peer != "" {
		var extra []string
		if p.peerEnv != "" {
			extra = strings.Split(p.peerEnv, ",")
		}
		if err := add(startPeer(ctx, p.peer, dir, redis.addr, extra)); err != nil {
			return err
		}
	}
	if p.memory {
		if err := add(startTollgate(ctx, "tollgate-memory", p.tollgate, confDir, "")); err != nil {
			return err
		}
	}
	for _, s := range servers {
		if err := s.connect(p.conns); err != nil {
			return err
		}
		s.idleRSS = s.rss()
	}
	reqs := requests(p.keys)
	fmt.Printf("load average at start: %s\n", loadavg())
	// Warm up every server (connections, Redis scripts, caches) once.
	for _, s := range servers {
		if _, err := s.load(reqs[3], 16, time.Second, nil); err != nil {
			return fmt.Errorf("%s: warm-up: %w", s.name, err)
		}
	}
	var rawOut *os.File
	if p.raw != "" {
		if rawOut, err = os.OpenFile(p.raw, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err != nil {
			return err
		}
		defer rawOut.Close()
	}
	results := map[cell][]result{}
	for r := 0; r < p.rounds; r++ {
		for _, c := range p.callers {
			for _, d := range p.descriptors {
				for i := range servers {
					s := servers[(i+r)%len(servers)]
					var prof chan error
					if p.profile != "" && r == 0 && c == slices.Max(p.callers) && d == slices.Max(p.descriptors) && s.debug != "" {
						prof = make(chan error, 1)
						go func() { prof <- s.profile(max(p.duration-time.Second, time.Second), p.profile+"-"+s.name+".pprof") }()
					}
					var rp *process
					if s.redis {
						rp = redis.process
					}
					res, err := s.load(reqs[d], c, p.duration, rp)
					if prof != nil {
						if err := <-prof; err != nil {
							fmt.Fprintf(os.Stderr, "%s: no profile: %v\n", s.name, err)
						}
					}
					if err != nil {
						return fmt.Errorf("%s: %w", s.name, err)
					}
					k := cell{s.name, c, d}
					results[k] = append(results[k], res)
					if rawOut != nil {
						us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
						if _, err := fmt.Fprintf(rawOut, "%s %d %d %d %.0f %.1f %.2f %.2f\n", s.name, c, d, r+1, res.perSec, us(res.p99), us(res.cpuPerCall), us(res.redisCPU)); err != nil {
							return err
						}
					}
					fmt.Fprintf(os.Stderr, "round %d %-16s callers %2d descriptors %d: %s\n", r+1, s.name, c, d, res)
				}
			}
		}
	}
	fmt.Printf("load average at end: %s\n\n", loadavg())
	report(os.Stdout, p, servers, results)
	return nil
}

// cell names one measurement: a server, a number of callers and of
// descriptors per request.
type cell struct {
	server      string
	callers     int
	descriptors int
}

// ints parses a comma-separated list of positive integers.
func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive integers, comma-separated", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
