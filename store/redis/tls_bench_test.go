package redis

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/redis/redisconf"
)

// BenchmarkTransport measures decisions per second at 64 concurrent
// callers to a local redis-server over plain TCP and over TLS (TLS 1.3,
// server certificate only) and with mutual TLS, in one run: the three
// alternate in transportRounds rounds (r1/tcp, r1/tls, r1/mtls, r2/tcp,
// ...), so that the machine's noise hits each alike (go test's -count
// would run each five times in a row). Every decision is a round trip (no
// over-limit cache), a token bucket on 10,000 keys that never refuses; a
// decision that is not Redis's (a timeout answered by the failure mode)
// fails the benchmark.
//
//	go test -run '^$' -bench BenchmarkTransport -benchtime 2s ./store/redis/
func BenchmarkTransport(b *testing.B) {
	pki := redistest.NewPKI(b)
	plain := redistest.Start(b)
	tlsSrv := redistest.StartTLS(b, redistest.TLSOptions{PKI: pki})
	mtlsSrv := redistest.StartTLS(b, redistest.TLSOptions{PKI: pki, ClientCerts: true})
	cert, key := pki.IssueValid(b, true)
	transports := []struct {
		name  string
		addr  string
		files *redisconf.TLSFiles
	}{
		{"tcp", plain.Addr, nil},
		{"tls", tlsSrv.Addr, &redisconf.TLSFiles{CAFile: pki.CAFile}},
		{"mtls", mtlsSrv.Addr, &redisconf.TLSFiles{CAFile: pki.CAFile, CertFile: cert, KeyFile: key}},
	}
	for round := 1; round <= transportRounds; round++ {
		for _, c := range transports {
			b.Run("r"+strconv.Itoa(round)+"/"+c.name, func(b *testing.B) { benchTransport(b, c.addr, c.files) })
		}
	}
}

// transportRounds is how many times BenchmarkTransport alternates the
// transports.
const transportRounds = 7

// benchTransport is one transport's run of BenchmarkTransport.
func benchTransport(b *testing.B, addr string, files *redisconf.TLSFiles) {
	cfg := Config{Addrs: []string{addr}, CacheSize: -1, Timeout: time.Second, OnFailure: failmode.Closed}
	if files != nil {
		tc, err := files.Load(time.Now())
		if err != nil {
			b.Fatal(err)
		}
		cfg.TLS = tc
	}
	s, err := New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.DialError(); err != nil {
		b.Fatal(err)
	}
	p := limit.Policy(limit.TokenBucket{Rate: limit.Per(1_000_000, time.Second), Burst: 1_000_000})
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = "bench-" + strconv.Itoa(i)
	}
	ctx := context.Background()
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0))) // 64 callers
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			d, err := s.Apply(ctx, keys[i%len(keys)], p, 1)
			if err != nil || !d.Allowed {
				b.Errorf("decision not Redis's: %v %+v", err, d)
				return
			}
			i += 7
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}
