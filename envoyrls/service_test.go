package envoyrls

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// newTestService is a service on a memory store at e2eStart (advanced by
// now) with the configuration yaml.
func newTestService(t *testing.T, cfg Config, yaml string, now *atomic.Int64) *Service {
	t.Helper()
	if now.Load() == 0 {
		now.Store(e2eStart.UnixNano())
	}
	st, err := memory.New(memory.Config{Clock: now.Load, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return serviceOn(t, st, cfg, yaml, now)
}

// serviceOn is a Service on st deciding at now, with the limits of yaml.
func serviceOn(t *testing.T, st limit.Store, cfg Config, yaml string, now *atomic.Int64) *Service {
	t.Helper()
	cfg.Store = st
	cfg.Now = func() time.Time { return time.Unix(0, now.Load()) }
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc.SetLimits(mustBuild(t, Source{Name: "t.yaml", Data: []byte(yaml)}))
	return svc
}

func ask(t *testing.T, svc *Service, domain string, ds ...*rlv3.RateLimitDescriptor) *rlsv3.RateLimitResponse {
	t.Helper()
	resp, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: domain, Descriptors: ds})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func codesOf(r *rlsv3.RateLimitResponse) []rlsv3.RateLimitResponse_Code {
	out := []rlsv3.RateLimitResponse_Code{r.GetOverallCode()}
	for _, s := range r.GetStatuses() {
		out = append(out, s.GetCode())
	}
	return out
}

const twoLimits = `
domain: d
descriptors:
  - key: wide
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: narrow
    rate_limit: {unit: minute, requests_per_unit: 1}
`

// By default a descriptor over its limit does not stop the others being
// charged; with StopIncrementWhenOverLimit only the one over is.
func TestAllOrNothingChargesNoDescriptorWhenOneIsOver(t *testing.T) {
	for _, tc := range []struct {
		allOrNothing bool
		wide         uint32 // wide's remaining after three requests with both
	}{{false, 7}, {true, 9}} {
		var now atomic.Int64
		svc := newTestService(t, Config{Charging: Charging{StopIncrementWhenOverLimit: tc.allOrNothing}}, twoLimits, &now)
		for range 3 {
			ask(t, svc, "d", desc("wide", "w"), desc("narrow", "n"))
		}
		r := ask(t, svc, "d", desc("wide", "w"))
		if got := r.GetStatuses()[0].GetLimitRemaining(); got != tc.wide-1 {
			t.Errorf("StopIncrementWhenOverLimit=%v: wide remaining %d after a fourth request, want %d", tc.allOrNothing, got, tc.wide-1)
		}
		r = ask(t, svc, "d", desc("wide", "w"), desc("narrow", "n"))
		want := []rlsv3.RateLimitResponse_Code{rlsv3.RateLimitResponse_OVER_LIMIT, rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT}
		if got := codesOf(r); got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("StopIncrementWhenOverLimit=%v: codes %v, want %v", tc.allOrNothing, got, want)
		}
	}
}

// tollgate_algorithm: token_bucket refills continuously where the fixed
// window waits for the next minute.
func TestAlgorithmExtensionKeyChoosesTheAlgorithm(t *testing.T) {
	var now atomic.Int64
	svc := newTestService(t, Config{}, `
domain: d
descriptors:
  - key: fixed
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: bucket
    rate_limit: {unit: minute, requests_per_unit: 2, tollgate_algorithm: token_bucket}
`, &now)
	for range 2 {
		ask(t, svc, "d", desc("fixed", "x"), desc("bucket", "x"))
	}
	now.Add(int64(30 * time.Second)) // one token back; the window still has 20s to run
	c := codesOf(ask(t, svc, "d", desc("fixed", "x"), desc("bucket", "x")))
	if c[1] != rlsv3.RateLimitResponse_OVER_LIMIT || c[2] != rlsv3.RateLimitResponse_OK {
		t.Fatalf("codes %v: want the fixed window over and the bucket refilled", c)
	}
	if _, err := Build([]Source{{Name: "x.yaml", Data: []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 2, tollgate_algorithm: token_bukket}\n")}}); err == nil {
		t.Fatal("a misspelt algorithm was accepted")
	}
}

// replaces drops the replaced limit; a quota_mode descriptor over its
// limit answers OK (limit_remaining 0, no duration_until_reset) and
// never makes the answer OVER_LIMIT, as envoyproxy/ratelimit's;
// requests_per_unit 0 refuses everything.
func TestReplacesQuotaModeAndZeroLimit(t *testing.T) {
	var now atomic.Int64
	svc := newTestService(t, Config{}, `
domain: d
descriptors:
  - key: base
    rate_limit: {name: base, unit: minute, requests_per_unit: 1}
  - key: premium
    rate_limit: {unit: minute, requests_per_unit: 100, replaces: [{name: base}]}
  - key: q1
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: q2
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: blocked
    rate_limit: {unit: second, requests_per_unit: 0}
`, &now)
	for range 3 {
		if c := codesOf(ask(t, svc, "d", desc("base", "u"), desc("premium", "u"))); c[0] != rlsv3.RateLimitResponse_OK {
			t.Fatalf("replaced limit still applies: %v", c)
		}
	}
	ask(t, svc, "d", desc("q1", "u"), desc("q2", "u"))
	for range 2 {
		r := ask(t, svc, "d", desc("q1", "u"), desc("q2", "u"))
		if c := codesOf(r); c[0] != rlsv3.RateLimitResponse_OK || c[1] != rlsv3.RateLimitResponse_OK || c[2] != rlsv3.RateLimitResponse_OK {
			t.Fatalf("quota over: %v, want all OK", c)
		}
		if st := r.GetStatuses()[0]; st.GetCurrentLimit() == nil || st.GetLimitRemaining() != 0 || st.GetDurationUntilReset() != nil {
			t.Fatalf("quota over: status %v, want current_limit, remaining 0, no duration", st)
		}
	}
	if c := codesOf(ask(t, svc, "d", desc("blocked", "x"))); c[0] != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("requests_per_unit 0: %v", c)
	}
}

// The legacy style is envoyproxy/ratelimit's trio for the descriptor
// nearest its limit; none adds nothing.
func TestLegacyAndNoHeaders(t *testing.T) {
	var now atomic.Int64
	svc := newTestService(t, Config{Headers: HeadersLegacy, ResetHeader: "X-Reset"}, twoLimits, &now)
	h := ask(t, svc, "d", desc("wide", "w"), desc("narrow", "n")).GetResponseHeadersToAdd()
	got := map[string]string{}
	for _, v := range h {
		got[v.GetKey()] = v.GetValue()
	}
	if len(h) != 3 || got["RateLimit-Limit"] != "1" || got["RateLimit-Remaining"] != "0" || got["X-Reset"] != "50" {
		t.Fatalf("legacy headers %v", got)
	}
	svc = newTestService(t, Config{Headers: HeadersNone}, twoLimits, &now)
	if h := ask(t, svc, "d", desc("wide", "w")).GetResponseHeadersToAdd(); len(h) != 0 {
		t.Fatalf("HeadersNone added %v", h)
	}
}

// ShadowMode (SHADOW_MODE) answers OK when a limit is over.
func TestGlobalShadowModeAnswersOK(t *testing.T) {
	var now atomic.Int64
	svc := newTestService(t, Config{ShadowMode: true}, twoLimits, &now)
	ask(t, svc, "d", desc("narrow", "n"))
	r := ask(t, svc, "d", desc("narrow", "n"))
	if r.GetOverallCode() != rlsv3.RateLimitResponse_OK || r.GetStatuses()[0].GetCode() != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("codes %v: want overall OK, status OVER_LIMIT", codesOf(r))
	}
}

// Answers as envoyproxy/ratelimit gives them: duration_until_reset in
// whole seconds to the end of the unit's window (here 0.25 s into a
// second: 50 s, not 49.75 s); the legacy headers from the last
// descriptor over its limit; a named unlimited limit never replaced;
// QUOTA_MODE making every limit a quota.
func TestAnswersAsEnvoyproxy(t *testing.T) {
	var now atomic.Int64
	now.Store(e2eStart.Add(250 * time.Millisecond).UnixNano())
	yaml := `
domain: d
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: b
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: c
    rate_limit: {unit: second, requests_per_unit: 5}
  - key: free
    rate_limit: {name: free, unlimited: true}
  - key: repl
    rate_limit: {unit: minute, requests_per_unit: 9, replaces: [{name: free}]}
`
	svc := newTestService(t, Config{Headers: HeadersLegacy}, yaml, &now)
	r := ask(t, svc, "d", desc("a", "x"), desc("b", "x"), desc("c", "x"))
	if d := r.GetStatuses()[0].GetDurationUntilReset(); d.GetSeconds() != 50 || d.GetNanos() != 0 {
		t.Fatalf("duration_until_reset %v, want 50s", d)
	}
	if d := r.GetStatuses()[1].GetDurationUntilReset(); d.GetSeconds() != 3600-10 || d.GetNanos() != 0 {
		t.Fatalf("hour duration_until_reset %v, want 3590s", d)
	}
	hdr := func(r *rlsv3.RateLimitResponse) map[string]string {
		got := map[string]string{}
		for _, v := range r.GetResponseHeadersToAdd() {
			got[v.GetKey()] = v.GetValue()
		}
		return got
	}
	// Nothing over: the least remaining (a, 0 left), the first of equals.
	if h := hdr(r); h["RateLimit-Limit"] != "1" || h["RateLimit-Remaining"] != "0" || h["RateLimit-Reset"] != "50" {
		t.Fatalf("headers %v, want a's", h)
	}
	// a and b over (b's second hit leaves 0, its third is over): the last
	// over, b, names the headers.
	ask(t, svc, "d", desc("b", "x"))
	r = ask(t, svc, "d", desc("a", "x"), desc("b", "x"), desc("c", "x"))
	if c := codesOf(r); c[1] != rlsv3.RateLimitResponse_OVER_LIMIT || c[2] != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("codes %v", c)
	}
	if h := hdr(r); h["RateLimit-Limit"] != "2" || h["RateLimit-Remaining"] != "0" || h["RateLimit-Reset"] != "3590" {
		t.Fatalf("headers %v, want b's (the last over)", h)
	}
	r = ask(t, svc, "d", desc("free", "x"), desc("repl", "x"))
	if st := r.GetStatuses()[0]; st.GetLimitRemaining() != math.MaxUint32 {
		t.Fatalf("replaced unlimited: %v, want limit_remaining 4294967295", st)
	}

	svc = newTestService(t, Config{QuotaMode: true}, yaml, &now)
	ask(t, svc, "d", desc("a", "q"))
	r = ask(t, svc, "d", desc("a", "q"))
	if st := r.GetStatuses()[0]; r.GetOverallCode() != rlsv3.RateLimitResponse_OK || st.GetCode() != rlsv3.RateLimitResponse_OK || st.GetDurationUntilReset() != nil {
		t.Fatalf("QUOTA_MODE: %v", r)
	}
}
