package envoyrls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/logtest"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/store/redis"
)

const threePerMinute = `
domain: d
descriptors:
  - key: k
    rate_limit: {unit: minute, requests_per_unit: 3}
`

// newRedisService is a service on a fresh Redis store of srv, whose
// clock reads now, with the configuration yaml.
func newRedisService(t *testing.T, srv *redistest.Server, cfg Config, yaml string, now *atomic.Int64) *Service {
	t.Helper()
	if now.Load() == 0 {
		now.Store(e2eStart.UnixNano())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := redis.New(ctx, redis.Config{Addrs: []string{srv.Addr}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	return serviceOn(t, rs, cfg, yaml, now)
}

func hitsDesc(hits uint64, kv ...string) *rlv3.RateLimitDescriptor {
	d := desc(kv...)
	d.HitsAddend = wrapperspb.UInt64(hits)
	return d
}

// A refused hits_addend is counted, as envoyproxy/ratelimit counts it
// (INCRBY first): 2 then 2 more (refused, 4 > 3), then 1 is refused too.
func TestRefusedHitsAreCounted(t *testing.T) {
	for name, svc := range map[string]func(*atomic.Int64) *Service{
		"memory": func(now *atomic.Int64) *Service { return newTestService(t, Config{}, threePerMinute, now) },
		"redis": func(now *atomic.Int64) *Service {
			return newRedisService(t, redistest.Start(t), Config{}, threePerMinute, now)
		},
	} {
		var now atomic.Int64
		s := svc(&now)
		want := []rlsv3.RateLimitResponse_Code{rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT, rlsv3.RateLimitResponse_OVER_LIMIT}
		for i, d := range []*rlv3.RateLimitDescriptor{hitsDesc(2, "k", "a"), hitsDesc(2, "k", "a"), hitsDesc(1, "k", "a")} {
			if got := ask(t, s, "d", d).GetOverallCode(); got != want[i] {
				t.Errorf("%s: request %d: %v, want %v", name, i, got, want[i])
			}
		}
	}
}

// The counters are envoyproxy/ratelimit's: key domain_key_value_..._ and
// the window's start in Unix seconds, an integer, expiring after the unit.
func TestCounterKeysAreEnvoyproxyRatelimits(t *testing.T) {
	srv := redistest.Start(t)
	var now atomic.Int64
	svc := newRedisService(t, srv, Config{}, `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: user
    descriptors:
      - key: plan
        rate_limit: {unit: hour, requests_per_unit: 10}
`, &now)
	ask(t, svc, "edge", hitsDesc(3, "remote_address", "10.0.0.1"), desc("user", "u1", "plan", "pro"))
	min := e2eStart.Unix() / 60 * 60
	hour := e2eStart.Unix() / 3600 * 3600
	for key, want := range map[string]string{
		"edge_remote_address_10.0.0.1_" + strconv.FormatInt(min, 10): "3",
		"edge_user_u1_plan_pro_" + strconv.FormatInt(hour, 10):       "1",
	} {
		if got := strings.TrimSpace(srv.CLI(t, "GET", key)); got != want {
			t.Errorf("GET %s = %q, want %q (keys: %q)", key, got, want, srv.CLI(t, "KEYS", "*"))
		}
		ttl, _ := strconv.Atoi(strings.TrimSpace(srv.CLI(t, "TTL", key)))
		if ttl <= 0 || ttl > 3600 {
			t.Errorf("TTL %s = %d", key, ttl)
		}
	}
	if n := strings.TrimSpace(srv.CLI(t, "DBSIZE")); n != "2" {
		t.Errorf("DBSIZE %s, want 2 (keys: %q)", n, srv.CLI(t, "KEYS", "*"))
	}
}

// A value longer than MaxBytes (a request header a client chose) does
// not fail the call, which Envoy's failure_mode_deny=false lets through
// with every other descriptor of the request: it is counted under its
// digest, the request's other descriptors as ever, and no key is as long
// as the value.
func TestOversizedValueIsCountedUnderItsDigest(t *testing.T) {
	srv := redistest.Start(t)
	var now atomic.Int64
	svc := newRedisService(t, srv, Config{}, `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: header
    rate_limit: {unit: minute, requests_per_unit: 100}
`, &now)
	huge := strings.Repeat("x", 1<<20)
	want := []rlsv3.RateLimitResponse_Code{rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT}
	for i := range want {
		resp, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge", HitsAddend: 2,
			Descriptors: []*rlv3.RateLimitDescriptor{desc("remote_address", "10.0.0.1"), desc("header", huge)}})
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got := resp.GetOverallCode(); got != want[i] {
			t.Errorf("request %d: %v, want %v", i, got, want[i])
		}
		if got := resp.GetStatuses()[1].GetLimitRemaining(); got != uint32(100-2*(i+1)) {
			t.Errorf("request %d: the oversized value's remaining %d, want %d", i, got, 100-2*(i+1))
		}
	}
	min := strconv.FormatInt(e2eStart.Unix()/60*60, 10)
	sum := sha256.Sum256([]byte(huge))
	key := "edge_header_sha256:" + hex.EncodeToString(sum[:16]) + "_" + min
	if got := strings.TrimSpace(srv.CLI(t, "GET", key)); got != "4" {
		t.Errorf("GET %s = %q, want 4 (keys: %.300q)", key, got, srv.CLI(t, "KEYS", "*"))
	}
	for _, k := range strings.Fields(srv.CLI(t, "KEYS", "*")) {
		if len(k) > 100 {
			t.Errorf("a key of %d bytes", len(k))
		}
	}
}

// CACHE_KEY_PREFIX starts every key.
func TestCacheKeyPrefix(t *testing.T) {
	srv := redistest.Start(t)
	var now atomic.Int64
	svc := newRedisService(t, srv, Config{Charging: Charging{CacheKeyPrefix: "pfx:"}}, threePerMinute, &now)
	ask(t, svc, "d", desc("k", "v"))
	key := "pfx:d_k_v_" + strconv.FormatInt(e2eStart.Unix()/60*60, 10)
	if got := strings.TrimSpace(srv.CLI(t, "GET", key)); got != "1" {
		t.Fatalf("GET %s = %q (keys %q)", key, got, srv.CLI(t, "KEYS", "*"))
	}
}

// An edited limit keeps its count: the key has no limit in it.
func TestEditedLimitKeepsItsCount(t *testing.T) {
	var now atomic.Int64
	svc := newTestService(t, Config{}, threePerMinute, &now)
	ask(t, svc, "d", hitsDesc(2, "k", "a"))
	svc.SetLimits(mustBuild(t, Source{Name: "t.yaml", Data: []byte(strings.Replace(threePerMinute, "requests_per_unit: 3", "requests_per_unit: 5", 1))}))
	if r := ask(t, svc, "d", desc("k", "a")).GetStatuses()[0].GetLimitRemaining(); r != 2 {
		t.Fatalf("remaining %d after 3 hits under an edited limit of 5, want 2", r)
	}
	svc.SetLimits(mustBuild(t, Source{Name: "t.yaml", Data: []byte(strings.Replace(threePerMinute, "requests_per_unit: 3", "requests_per_unit: 2", 1))}))
	if c := ask(t, svc, "d", desc("k", "a")).GetOverallCode(); c != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("%v after 3 hits under a limit tightened to 2, want OVER_LIMIT", c)
	}
}

// With the local cache off (the default), deleting the keys (FLUSHALL)
// unblocks at once; with LocalCacheBytes the key stays refused until its
// window ends, and not after.
func TestLocalCacheOffByDefaultAndEndsWithTheWindow(t *testing.T) {
	srv := redistest.Start(t)
	for _, cacheBytes := range []int{0, 1 << 20} {
		srv.CLI(t, "FLUSHALL")
		var now atomic.Int64
		svc := newRedisService(t, srv, Config{Charging: Charging{LocalCacheBytes: cacheBytes}}, threePerMinute, &now)
		ask(t, svc, "d", hitsDesc(3, "k", "a"))
		if c := ask(t, svc, "d", desc("k", "a")).GetOverallCode(); c != rlsv3.RateLimitResponse_OVER_LIMIT {
			t.Fatalf("a fourth hit: %v", c)
		}
		srv.CLI(t, "FLUSHALL")
		got := ask(t, svc, "d", desc("k", "a")).GetOverallCode()
		want := rlsv3.RateLimitResponse_OK
		if cacheBytes > 0 {
			want = rlsv3.RateLimitResponse_OVER_LIMIT
		}
		if got != want {
			t.Errorf("LocalCacheBytes %d: %v after FLUSHALL, want %v", cacheBytes, got, want)
		}
		now.Add(int64(50 * time.Second)) // the next minute
		if got := ask(t, svc, "d", desc("k", "a")).GetOverallCode(); got != rlsv3.RateLimitResponse_OK {
			t.Errorf("LocalCacheBytes %d: %v in the next window, want OK", cacheBytes, got)
		}
	}
}

// The local cache stays within its bytes, whatever the keys.
func TestLocalCacheIsBounded(t *testing.T) {
	c := newOverCache(10_000)
	for i := range 10_000 {
		c.add(strconv.Itoa(i)+strings.Repeat("x", 30), 1, 2)
		if c.bytes > c.max {
			t.Fatalf("%d bytes after %d keys, budget %d", c.bytes, i+1, c.max)
		}
	}
	if !c.has("9999"+strings.Repeat("x", 30), 1) || c.has("9999"+strings.Repeat("x", 30), 2) {
		t.Fatal("the newest key is not cached until its end")
	}
}

// A Redis that is down is an error, as envoyproxy/ratelimit's: gRPC
// Unknown, /json 400; Envoy's failure_mode_deny decides. Each counted in
// tollgate_rls_store_fallbacks_total, the log written once.
func TestRedisDownIsTheCallsError(t *testing.T) {
	srv := redistest.Start(t)
	var now atomic.Int64
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, 0)
	if err != nil {
		t.Fatal(err)
	}
	var logsMu logtest.Buffer
	svc := newRedisService(t, srv, Config{Metrics: m, Charging: Charging{Logger: slog.New(slog.NewTextHandler(&logsMu, nil))}}, threePerMinute, &now)
	ask(t, svc, "d", desc("k", "a"))
	srv.Kill()
	for range 5 {
		_, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("k", "a")}})
		if status.Code(err) != codes.Unknown {
			t.Fatalf("Redis down: %v, want a gRPC Unknown error", err)
		}
	}
	rec := httptest.NewRecorder()
	svc.HTTPHandler().ServeHTTP(rec, httptest.NewRequest("POST", "/json", strings.NewReader(`{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"a"}]}]}`)))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("/json with Redis down: %d, want 400", rec.Code)
	}
	if n := counter(t, reg, "tollgate_rls_store_fallbacks_total", "", ""); n != 6 {
		t.Errorf("fallbacks counted %v, want 6", n)
	}
	if n := strings.Count(logsMu.String(), "store failed"); n != 1 {
		t.Errorf("%d log lines in the first second, want 1:\n%s", n, logsMu.String())
	}
}

// TOLLGATE_REDIS_ON_ERROR's answers: open OK, closed OVER_LIMIT, local
// counted in memory.
func TestOnErrorAnswers(t *testing.T) {
	srv := redistest.Start(t)
	srv.Kill()
	for mode, want := range map[failmode.Mode][]rlsv3.RateLimitResponse_Code{
		failmode.Open:   {rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OK},
		failmode.Closed: {rlsv3.RateLimitResponse_OVER_LIMIT, rlsv3.RateLimitResponse_OVER_LIMIT},
		failmode.Local:  {rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT},
	} {
		var now atomic.Int64
		cfg := Config{Charging: Charging{OnError: mode}}
		if mode == failmode.Local {
			cfg.LocalStore = newTestService(t, Config{}, threePerMinute, &now).cfg.Store
		}
		svc := newRedisService(t, srv, cfg, threePerMinute, &now)
		for i, d := range []*rlv3.RateLimitDescriptor{hitsDesc(3, "k", "a"), desc("k", "a")} {
			if got := ask(t, svc, "d", d).GetOverallCode(); got != want[i] {
				t.Errorf("on_error %s: request %d: %v, want %v", mode, i, got, want[i])
			}
		}
	}
}

// A slow Redis is waited for up to the timeout (REDIS_TIMEOUT), not
// answered from a local count.
func TestSlowRedisIsWaitedFor(t *testing.T) {
	srv := redistest.Start(t, "--enable-debug-command", "yes")
	var now atomic.Int64
	svc := newRedisService(t, srv, Config{}, threePerMinute, &now)
	ask(t, svc, "d", desc("k", "a"))
	done := srv.Sleep(t, 500*time.Millisecond)
	r, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("k", "a")}})
	<-done
	if err != nil || r.GetStatuses()[0].GetLimitRemaining() != 1 {
		t.Fatalf("%v, %v: want the second hit counted in Redis (remaining 1)", r, err)
	}
	if got := strings.TrimSpace(srv.CLI(t, "GET", "d_k_a_"+strconv.FormatInt(e2eStart.Unix()/60*60, 10))); got != "2" {
		t.Fatalf("count %q in Redis, want 2", got)
	}
}

// A caller that gives up (Envoy's timeout) while Redis is slow gets its
// context's error, not counted as a store failure.
func TestCallerTimeoutIsNotAFallback(t *testing.T) {
	srv := redistest.Start(t, "--enable-debug-command", "yes")
	var now atomic.Int64
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, 0)
	if err != nil {
		t.Fatal(err)
	}
	svc := newRedisService(t, srv, Config{Metrics: m}, threePerMinute, &now)
	ask(t, svc, "d", desc("k", "a"))
	done := srv.Sleep(t, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = svc.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("k", "a")}})
	<-done
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("%v, want DeadlineExceeded", err)
	}
	if n := counter(t, reg, "tollgate_rls_store_fallbacks_total", "", ""); n != 0 {
		t.Fatalf("%v fallbacks counted for a caller's timeout", n)
	}
}
