package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/tollgate-dev/tollgate/replay"
)

// BenchmarkReplay runs `tollgate replay`'s simulation (replay.Run, the
// five policies of bench/replay_speed.sh) over a log of this generator
// held in memory, so that its per-line path can be profiled:
//
//	cd bench && go test -run '^$' -bench Replay -benchtime 1x -cpuprofile /tmp/replay.cpu ./replay_gen
//	go tool pprof -top /tmp/replay.cpu
//
// REPLAY_LINES (default 2,000,000) and REPLAY_CLIENTS (default 200,000)
// size the log; one op is one pass over it, and lines/s is reported.
func BenchmarkReplay(b *testing.B) {
	n, clients := envInt(b, "REPLAY_LINES", 2_000_000), envInt(b, "REPLAY_CLIENTS", 200_000)
	var log bytes.Buffer
	if err := generate(&log, n, clients, 1000, 1); err != nil {
		b.Fatal(err)
	}
	var ps []replay.Policy
	for _, s := range []string{"token_bucket:rate=10/s,burst=20", "leaky_bucket:rate=10/s,burst=10,mode=police",
		"fixed_window:limit=100,window=1m", "sliding_window:limit=100,window=1m", "sliding_log:limit=100,window=1m"} {
		p, err := replay.ParsePolicy(s)
		if err != nil {
			b.Fatal(err)
		}
		ps = append(ps, p)
	}
	b.SetBytes(int64(log.Len()))
	b.ResetTimer()
	for range b.N {
		rep, err := replay.Run(context.Background(), bytes.NewReader(log.Bytes()), replay.Config{Policies: ps})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Input.Simulated != int64(n) {
			b.Fatalf("simulated %d of %d lines", rep.Input.Simulated, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}
