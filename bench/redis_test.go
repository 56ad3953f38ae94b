package bench

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	redisstore "github.com/tollgate-dev/tollgate/store/redis"
)

// The Redis workload (issue 5): GCRA / token bucket of 100/s with a burst
// of 100 (so decisions are mostly allowances and neither side's refusal
// path dominates), on keys chosen at random among 10,000, by 1, 16 or 64
// concurrent callers, against one local redis-server shared by both
// clients in the same run.
const redisKeys = 10_000

var redisKeyNames = func() []string {
	k := make([]string, redisKeys)
	for i := range k {
		k[i] = "user-" + strconv.Itoa(i)
	}
	return k
}()

// BenchmarkRedisDecisions compares tollgate's Redis store (rueidis,
// auto-pipelined EVALSHA, concurrent decisions batched into one call,
// over-limit cache off) with go-redis/redis_rate v10 (go-redis v9 pool,
// EVALSHA) on the same server. Metrics: decisions/s, p50/p99 latency of
// one decision in µs, and Redis's own cost (serverCost). bench/redis_rounds.sh
// runs it in interleaved rounds.
func BenchmarkRedisDecisions(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()

	st, err := redisstore.New(ctx, redisstore.Config{Addrs: []string{srv.Addr}, CacheSize: -1, Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	policy := limit.Policy(limit.TokenBucket{Rate: limit.Per(100, time.Second), Burst: 100})
	tollgate := func(key string) bool {
		d, err := st.Apply(ctx, key, policy, 1)
		if err != nil {
			b.Error(err)
		}
		return d.Allowed
	}

	// The same store without the 20µs flush delay: lower latency for a
	// lone caller, fewer decisions per second under load.
	st0, err := redisstore.New(ctx, redisstore.Config{Addrs: []string{srv.Addr}, CacheSize: -1, Timeout: time.Second, FlushDelay: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer st0.Close()
	tollgateNoFlush := func(key string) bool {
		d, err := st0.Apply(ctx, key, policy, 1)
		if err != nil {
			b.Error(err)
		}
		return d.Allowed
	}

	rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	defer rdb.Close()
	rl := redis_rate.NewLimiter(rdb)
	lim := redis_rate.Limit{Rate: 100, Burst: 100, Period: time.Second}
	redisRate := func(key string) bool {
		res, err := rl.Allow(ctx, key, lim)
		if err != nil {
			b.Error(err)
			return false
		}
		return res.Allowed > 0
	}

	// serverCost wraps a sub-benchmark to report the server's own cost,
	// which the machine's noise disturbs less than throughput: its CPU
	// time per decision (user + system, INFO cpu, the whole process:
	// reading, running and answering), the time per script call (INFO
	// commandstats: running it only) and the decisions per call.
	serverCost := func(f func(b *testing.B)) func(b *testing.B) {
		return func(b *testing.B) {
			rdb.ConfigResetStat(ctx)
			cpu0 := redisCPU(b, rdb)
			f(b)
			cpu := redisCPU(b, rdb) - cpu0
			info, err := rdb.Info(ctx, "commandstats").Result()
			if err != nil {
				b.Fatal(err)
			}
			var calls float64
			for _, line := range strings.Split(info, "\n") {
				if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
					continue
				}
				calls += infoField(line, "calls=")
				if strings.HasPrefix(line, "cmdstat_evalsha:") {
					b.ReportMetric(infoField(line, "usec_per_call="), "server-µs/call")
				}
			}
			if calls > 0 {
				b.ReportMetric(float64(b.N)/calls, "decisions/call")
			}
			b.ReportMetric(cpu.Seconds()*1e6/float64(b.N), "redis-cpu-µs/decision")
		}
	}
	for _, conc := range []int{1, 16, 64} {
		b.Run("impl=tollgate/callers="+strconv.Itoa(conc), serverCost(func(b *testing.B) { runCallers(b, conc, tollgate) }))
		b.Run("impl=tollgate-noflush/callers="+strconv.Itoa(conc), serverCost(func(b *testing.B) { runCallers(b, conc, tollgateNoFlush) }))
		b.Run("impl=redis_rate/callers="+strconv.Itoa(conc), serverCost(func(b *testing.B) { runCallers(b, conc, redisRate) }))
	}
	// The server's own ceiling for the same scripts, measured by
	// redis-benchmark on the same server: 64 connections without
	// pipelining (like 64 callers each waiting for its answer), and with
	// 16 commands pipelined per connection.
	ourSHA, err := rdb.ScriptLoad(ctx, redisstore.ScriptSource(limit.AlgTokenBucket)).Result()
	if err != nil {
		b.Fatal(err)
	}
	theirSHA, err := rdb.ScriptLoad(ctx, redisRateScript(b)).Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, pipe := range []string{"1", "16"} {
		b.Run("impl=redis-benchmark-tollgate-script/callers=64/pipeline="+pipe, serverCost(func(b *testing.B) {
			redisBenchmark(b, srv, pipe, "evalsha", ourSHA, "1", "tollgate:{user-__rand_int__}", "-1", "0", "1", "0", "10000", "100", "0", "0")
		}))
		b.Run("impl=redis-benchmark-redis_rate-script/callers=64/pipeline="+pipe, serverCost(func(b *testing.B) {
			redisBenchmark(b, srv, pipe, "evalsha", theirSHA, "1", "rate:user-__rand_int__", "100", "100", "1", "1")
		}))
	}
	if st.Stats().Failures != 0 {
		b.Fatalf("tollgate store failures: %+v", st.Stats())
	}
}

// redisCPU is redis-server's CPU time so far, user + system (INFO cpu).
func redisCPU(b *testing.B, rdb *goredis.Client) time.Duration {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var sec float64
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		for _, f := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(line, f); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatalf("INFO cpu: %q: %v", line, err)
				}
				sec += x
			}
		}
	}
	return time.Duration(sec * float64(time.Second))
}

// infoField is the number after name in an INFO line ("calls=12,..."), 0
// when it has none.
func infoField(line, name string) float64 {
	i := strings.Index(line, name)
	if i < 0 {
		return 0
	}
	v := line[i+len(name):]
	if j := strings.IndexAny(v, ",\r"); j >= 0 {
		v = v[:j]
	}
	x, _ := strconv.ParseFloat(v, 64)
	return x
}

// redisBenchmark runs redis-benchmark (64 connections, keys among 10,000)
// against srv and reports its requests per second as decisions/s.
func redisBenchmark(b *testing.B, srv *redistest.Server, pipeline string, cmd ...string) {
	n := strconv.Itoa(max(b.N, 50_000))
	args := append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(srv.Port), "-n", n, "-c", "64", "-P", pipeline,
		"-r", strconv.Itoa(redisKeys), "--csv"}, cmd...)
	out, err := exec.Command("redis-benchmark", args...).Output()
	if err != nil {
		b.Fatalf("redis-benchmark: %v: %s", err, out)
	}
	// CSV: a header line, then "name","rps","avg","min","p50","p95","p99","max".
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	f := strings.Split(lines[len(lines)-1], ",")
	if len(f) < 7 {
		b.Fatalf("redis-benchmark output: %s", out)
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(strings.Trim(s, `"`), 64)
		if err != nil {
			b.Fatalf("redis-benchmark output %q: %v", s, err)
		}
		return v
	}
	b.ReportMetric(num(f[1]), "decisions/s")
	b.ReportMetric(num(f[4])*1000, "p50-µs")
	b.ReportMetric(num(f[6])*1000, "p99-µs")
	b.ReportMetric(0, "ns/op")
}

// redisRateScript is redis_rate v10's allowN script, read from its source in
// the module cache (the package does not export it).
func redisRateScript(b *testing.B) string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/go-redis/redis_rate/v10").Output()
	if err != nil {
		b.Fatalf("go list: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "lua.go"))
	if err != nil {
		b.Fatal(err)
	}
	s := string(src)
	i := strings.Index(s, "allowN = redis.NewScript(`")
	if i < 0 {
		b.Fatal("redis_rate: allowN script not found")
	}
	s = s[i+len("allowN = redis.NewScript(`"):]
	return s[:strings.Index(s, "`")]
}

// runCallers splits b.N decisions over conc goroutines, each on its own
// random key sequence, and reports throughput and latency percentiles.
func runCallers(b *testing.B, conc int, decide func(key string) bool) {
	per := max(b.N/conc, 1)
	lat := make([][]time.Duration, conc)
	for i := range lat {
		lat[i] = make([]time.Duration, per)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			l := lat[g]
			<-start
			for i := range l {
				key := redisKeyNames[r.IntN(redisKeys)]
				t0 := time.Now()
				decide(key)
				l[i] = time.Since(t0)
			}
		}()
	}
	b.ResetTimer()
	t0 := time.Now()
	close(start)
	wg.Wait()
	el := time.Since(t0)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(len(all))/el.Seconds(), "decisions/s")
	b.ReportMetric(float64(all[len(all)/2])/1e3, "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100])/1e3, "p99-µs")
	b.ReportMetric(0, "ns/op")
}
