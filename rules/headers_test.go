package rules

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/tollgate-dev/tollgate/limit"
)

// The draft's own pairing: RateLimit-Policy: "fixedwindow";q=100;w=60 and
// RateLimit: "fixedwindow";r=99;t=50, ten seconds into the minute.
func TestDraft10HeadersMatchTheDraftExample(t *testing.T) {
	e, c := newEngine(t, Config{Rules: []Rule{{
		Name:     "fixedwindow",
		Policies: []Policy{{Algorithm: "fixed_window", Limit: 100, Window: "60s"}},
	}}})
	c.add(10 * time.Second) // the clock starts on a whole minute
	res := decide(t, e, get("/", "192.0.2.1"))
	h := headers(&res)
	if got := h[HeaderRateLimitPolicy]; got != `"fixedwindow";q=100;w=60` {
		t.Errorf("RateLimit-Policy %s", got)
	}
	if got := h[HeaderRateLimit]; got != `"fixedwindow";r=99;t=50` {
		t.Errorf("RateLimit %s", got)
	}
	checkSF(t, h)
}

// TestDraft10SeveralPolicies: the draft's "permin"/"perhr" example; the
// RateLimit field names the most restrictive one.
func TestDraft10SeveralPolicies(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name: "api",
		Policies: []Policy{
			{Name: "permin", Algorithm: "fixed_window", Limit: 50, Window: "1m"},
			{Name: "perhr", Algorithm: "fixed_window", Limit: 1000, Window: "1h"},
		},
	}}})
	res := decide(t, e, get("/", "192.0.2.1"))
	h := headers(&res)
	if got := h[HeaderRateLimitPolicy]; got != `"permin";q=50;w=60, "perhr";q=1000;w=3600` {
		t.Errorf("RateLimit-Policy %s", got)
	}
	if got := h[HeaderRateLimit]; got != `"permin";r=49;t=60` {
		t.Errorf("RateLimit %s", got)
	}
	checkSF(t, h)
}

// checkSF parses the structured fields with a real parser and checks the
// parameters the draft requires.
func checkSF(t *testing.T, h map[string]string) {
	t.Helper()
	if v, ok := h[HeaderRateLimitPolicy]; ok {
		l, err := httpsfv.UnmarshalList([]string{v})
		if err != nil {
			t.Fatalf("RateLimit-Policy %q: %v", v, err)
		}
		for _, m := range l {
			it := m.(httpsfv.Item)
			if _, ok := it.Value.(string); !ok {
				t.Errorf("policy name %v is not an sf-string", it.Value)
			}
			if q, ok := it.Params.Get("q"); !ok || q.(int64) < 0 {
				t.Errorf("q = %v", q)
			}
			if w, ok := it.Params.Get("w"); ok && w.(int64) <= 0 {
				t.Errorf("w = %v", w)
			}
		}
	}
	if v, ok := h[HeaderRateLimit]; ok {
		l, err := httpsfv.UnmarshalList([]string{v})
		if err != nil {
			t.Fatalf("RateLimit %q: %v", v, err)
		}
		if len(l) != 1 {
			t.Fatalf("RateLimit has %d members", len(l))
		}
		it := l[0].(httpsfv.Item)
		if r, ok := it.Params.Get("r"); !ok || r.(int64) < 0 {
			t.Errorf("r = %v", r)
		}
	}
	for _, name := range []string{HeaderRateLimitLimit, HeaderRateLimitRemaining, HeaderRateLimitReset} {
		if v, ok := h[name]; ok {
			it, err := httpsfv.UnmarshalItem([]string{v})
			if err != nil {
				t.Fatalf("%s %q: %v", name, v, err)
			}
			if n, ok := it.Value.(int64); !ok || n < 0 {
				t.Errorf("%s = %v", name, it.Value)
			}
		}
	}
}

func TestAllStylesAndRefusal(t *testing.T) {
	e, c := newEngine(t, Config{
		Headers: Headers{Styles: []string{StyleDraft10, StyleDraft6, StyleLegacy}},
		Rules: []Rule{{
			Name:     "tb",
			Policies: []Policy{{Rate: "2/10s"}}, // token bucket, burst 2, one token per 5s
		}},
	})
	c.add(500 * time.Millisecond)
	decide(t, e, get("/", "192.0.2.1"))
	res := decide(t, e, get("/", "192.0.2.1"))
	h := headers(&res)
	// Nothing left: the reset is when the next token is back (5s), not
	// when the bucket is full again (10s).
	want := map[string]string{
		HeaderRateLimitPolicy:     `"tb";q=2;w=10`,
		HeaderRateLimit:           `"tb";r=0;t=5`,
		HeaderRateLimitLimit:      "2",
		HeaderRateLimitRemaining:  "0",
		HeaderRateLimitReset:      "5",
		HeaderXRateLimitLimit:     "2",
		HeaderXRateLimitRemaining: "0",
		HeaderXRateLimitReset:     strconv.FormatInt(c.wall().Add(5*time.Second).Unix()+1, 10),
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("%s: %q, want %q", k, h[k], v)
		}
	}
	if _, ok := h[HeaderRetryAfter]; ok {
		t.Error("Retry-After on an allowance")
	}
	checkSF(t, h)

	// Refused: t and Retry-After both say when this request could pass
	// (5s), and Retry-After is not earlier than t.
	res = decide(t, e, get("/", "192.0.2.1"))
	if res.Outcome != Refused {
		t.Fatalf("third request %v", res.Outcome)
	}
	h = headers(&res)
	if h[HeaderRateLimit] != `"tb";r=0;t=5` || h[HeaderRetryAfter] != "5" || h[HeaderCacheControl] != "no-store" {
		t.Errorf("refusal headers %v", h)
	}
	checkSF(t, h)

	ref := res.Refusal()
	if ref.Status != 429 || ref.ContentType != "application/problem+json" {
		t.Fatalf("refusal %d %s", ref.Status, ref.ContentType)
	}
	var body map[string]any
	if err := json.Unmarshal(ref.Body, &body); err != nil {
		t.Fatalf("body %s: %v", ref.Body, err)
	}
	wantBody := map[string]any{
		"type":              ProblemQuotaExceeded,
		"title":             "Too Many Requests",
		"status":            float64(429),
		"detail":            "Rate limit exceeded; retry in 5 seconds.",
		"instance":          "/",
		"retry-after":       float64(5),
		"violated-policies": []any{"tb"},
	}
	if g, w := mustJSON(body), mustJSON(wantBody); g != w {
		t.Errorf("body\n%s\nwant\n%s", g, w)
	}
}

func TestLegacyDeltaReset(t *testing.T) {
	e, _ := newEngine(t, Config{
		Headers: Headers{Styles: []string{StyleLegacy}, Reset: "delta"},
		Rules:   []Rule{{Name: "w", Policies: []Policy{{Algorithm: "sliding_window", Rate: "10/m"}}}},
	})
	res := decide(t, e, get("/", "192.0.2.1"))
	h := headers(&res)
	if len(h) != 3 || h[HeaderXRateLimitLimit] != "10" || h[HeaderXRateLimitRemaining] != "9" || h[HeaderXRateLimitReset] == "" {
		t.Fatalf("headers %v", h)
	}
	if n, err := strconv.Atoi(h[HeaderXRateLimitReset]); err != nil || n <= 0 || n > 120 {
		t.Fatalf("delta reset %q", h[HeaderXRateLimitReset])
	}
}

func TestNoHeaderStyles(t *testing.T) {
	e, _ := newEngine(t, Config{
		Headers: Headers{Styles: []string{}},
		Rules:   []Rule{{Name: "w", Policies: []Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1m"}}}},
	})
	res := decide(t, e, get("/", "192.0.2.1"))
	if h := headers(&res); len(h) != 0 {
		t.Fatalf("headers %v", h)
	}
	res = decide(t, e, get("/", "192.0.2.1"))
	if h := headers(&res); len(h) != 2 || h[HeaderRetryAfter] != "60" || h[HeaderCacheControl] != "no-store" {
		t.Fatalf("refusal headers %v: Retry-After is always sent", h)
	}
}

func TestCustomRefusal(t *testing.T) {
	e, _ := newEngine(t, Config{
		Refusal: Refusal{Status: 503, Body: "slow down: {{.RetryAfter}}s ({{range .ViolatedPolicies}}{{.}}{{end}})\n"},
		Rules:   []Rule{{Name: "one", Policies: []Policy{{Algorithm: "fixed_window", Limit: 1, Window: "30s"}}}},
	})
	decide(t, e, get("/", "192.0.2.1"))
	res := decide(t, e, get("/", "192.0.2.1"))
	ref := res.Refusal()
	if ref.Status != 503 || ref.ContentType != "text/plain; charset=utf-8" || string(ref.Body) != "slow down: 30s (one)\n" {
		t.Fatalf("%d %s %q", ref.Status, ref.ContentType, ref.Body)
	}
}

func TestProblemEscaping(t *testing.T) {
	e, _ := newEngine(t, Config{
		Refusal: Refusal{Title: "Quota \"exceeded\"", Detail: "ünïcode <b> & \x01"},
		Rules:   []Rule{{Name: "one", Policies: []Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1s"}}}},
	})
	decide(t, e, get("/x\"y\xff", "192.0.2.1"))
	res := decide(t, e, get("/x\"y\xff", "192.0.2.1"))
	var body map[string]any
	b := res.Refusal().Body
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if body["title"] != "Quota \"exceeded\"" || body["detail"] != "ünïcode <b> & \x01" || body["instance"] != "/x%22y%FF" {
		t.Fatalf("%v", body)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestRefusalOfARequestThatCanNeverPass(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name: "small", Policies: []Policy{{Algorithm: "fixed_window", Limit: 3, Window: "1m"}},
		Cost: Cost{Default: 5},
	}}})
	res := decide(t, e, get("/big", "192.0.2.1"))
	if res.Outcome != Refused || res.Decision.RetryAfter != limit.Never {
		t.Fatalf("%v %v", res.Outcome, res.Decision.RetryAfter)
	}
	h := headers(&res)
	if h[HeaderRetryAfter] != "1" {
		t.Errorf("Retry-After %q for an idle key", h[HeaderRetryAfter])
	}
	checkSF(t, h)
	var body map[string]any
	json.Unmarshal(res.Refusal().Body, &body)
	if !strings.Contains(body["detail"].(string), "costs more") {
		t.Errorf("detail %q", body["detail"])
	}
}

// X-RateLimit-Reset as an epoch is the window's end, not a second later:
// a fixed 1m window, a request half a second in.
func TestLegacyEpochResetIsTheWindowEnd(t *testing.T) {
	e, c := newEngine(t, Config{
		Rules:   []Rule{{Name: "w", Policies: []Policy{{Algorithm: "fixed_window", Limit: 10, Window: "1m"}}}},
		Headers: Headers{Styles: []string{StyleLegacy}},
	})
	start := c.wall()
	c.add(500 * time.Millisecond)
	res := decide(t, e, get("/", "192.0.2.1"))
	want := strconv.FormatInt(start.Add(time.Minute).Unix(), 10)
	if got := headers(&res)[HeaderXRateLimitReset]; got != want {
		t.Errorf("X-RateLimit-Reset = %s, want %s (the window's end)", got, want)
	}
}

// TestNothingLeftResetIsTheNextUnit: the last admitted request of a token
// bucket of 10/s, burst 20 says r=0 and t=1 (the next token is 100ms
// away), not t=2 (the whole refill), in every header style; so do the
// other algorithms, each with its own wait for one unit.
func TestNothingLeftResetIsTheNextUnit(t *testing.T) {
	for _, c := range []struct {
		policy Policy
		n      int           // requests to spend the allowance
		gap    time.Duration // before the last of them
		next   time.Duration // then the wait for one unit
	}{
		{Policy{Algorithm: "token_bucket", Rate: "10/s", Burst: 20}, 20, 0, 100 * time.Millisecond},   // full in 2s
		{Policy{Algorithm: "leaky_bucket", Rate: "1/s", Burst: 4, Mode: "police"}, 5, 0, time.Second}, // drained in 5s
		{Policy{Algorithm: "sliding_log", Limit: 3, Window: "10s"}, 3, 2 * time.Second, 8 * time.Second},
		{Policy{Algorithm: "sliding_window", Limit: 3, Window: "10s"}, 3, 0, 10*time.Second + 1}, // idle in 20s
		{Policy{Algorithm: "fixed_window", Limit: 3, Window: "10s"}, 3, 0, 10 * time.Second},
	} {
		t.Run(c.policy.Algorithm, func(t *testing.T) {
			c.policy.Name = "p"
			e, clk := newEngine(t, Config{
				Headers: Headers{Styles: []string{StyleDraft10, StyleDraft6, StyleLegacy}},
				Rules:   []Rule{{Name: "r", Policies: []Policy{c.policy}}},
			})
			var res Result
			for i := range c.n {
				if i == c.n-1 {
					clk.add(c.gap)
				}
				if res = decide(t, e, get("/", "192.0.2.1")); res.Outcome != Allowed {
					t.Fatalf("request %d: %v", i+1, res.Outcome)
				}
			}
			sec := int64(time.Second)
			secs := strconv.FormatInt((int64(c.next)+sec-1)/sec, 10)
			h := headers(&res)
			want := map[string]string{
				HeaderRateLimit:           `"p";r=0;t=` + secs,
				HeaderRateLimitRemaining:  "0",
				HeaderRateLimitReset:      secs,
				HeaderXRateLimitRemaining: "0",
				HeaderXRateLimitReset:     strconv.FormatInt((clk.now()+int64(c.next)+sec-1)/sec, 10),
			}
			for k, v := range want {
				if h[k] != v {
					t.Errorf("%s: %q, want %q", k, h[k], v)
				}
			}
			checkSF(t, h)
		})
	}
}

// The one field writer (FieldWriter) allocates nothing in
// AppendRawHeaders, whatever it writes: every style, a RateLimit-Policy
// list of two rules, a refusal's Retry-After, the epoch reset.
func TestAppendRawHeadersAllocatesNothing(t *testing.T) {
	e, _ := newEngine(t, Config{
		Rules: []Rule{
			{Name: "a", Policies: []Policy{{Rate: "1/h", Burst: 1}}},
			{Name: "b", Policies: []Policy{{Rate: "100/s"}}},
		},
		Headers: Headers{Styles: []string{StyleDraft10, StyleDraft6, StyleLegacy}},
	})
	for i, want := range []Outcome{Allowed, Refused} {
		res := decide(t, e, get("/", "192.0.2.1"))
		if res.Outcome != want {
			t.Fatalf("request %d: %v, want %v", i+1, res.Outcome, want)
		}
		var hs [10]RawHeader
		var buf [128]byte
		raw, _ := res.AppendRawHeaders(hs[:0], buf[:0])
		if n := len(raw); n < 8 {
			t.Fatalf("request %d: %d fields", i+1, n)
		}
		if n := testing.AllocsPerRun(1000, func() { res.AppendRawHeaders(hs[:0], buf[:0]) }); n != 0 {
			t.Errorf("request %d (%v): %v allocs, want 0", i+1, want, n)
		}
	}
}
