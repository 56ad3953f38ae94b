package client

import (
	"net/http"
	"testing"
)

var sink *http.Response

// canned answers every request with the same response, no network.
type canned struct{ h http.Header }

func (c canned) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: c.h, Body: http.NoBody, Request: r}, nil
}

func benchRoundTrip(b *testing.B, h http.Header) {
	tr, err := New(Config{Transport: canned{h}})
	if err != nil {
		b.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:8080/items/42", nil)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatal(resp, err)
		}
	}
}

// BenchmarkRoundTrip is the Transport's own cost per allowed request,
// over a RoundTripper that answers at once (bare): with no rate-limit
// fields, and with draft-10 or X-RateLimit fields to parse (an allowance
// large enough that pacing never waits).
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:8080/items/42", nil)
		rt := canned{http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			sink, _ = rt.RoundTrip(req)
		}
	})
	b.Run("no_fields", func(b *testing.B) { benchRoundTrip(b, http.Header{}) })
	b.Run("draft10", func(b *testing.B) {
		benchRoundTrip(b, http.Header{
			"Ratelimit-Policy": {`"api";q=1000000;w=1`},
			"Ratelimit":        {`"api";r=999999;t=1`},
		})
	})
	b.Run("legacy", func(b *testing.B) {
		benchRoundTrip(b, http.Header{
			"X-Ratelimit-Limit":     {"1000000"},
			"X-Ratelimit-Remaining": {"999999"},
			"X-Ratelimit-Reset":     {"1"},
		})
	})
}

// TestRoundTripAllocs: for a response without rate-limit fields, or with
// X-RateLimit-* fields, the Transport adds no allocation to the one the
// base RoundTripper makes for its response.
func TestRoundTripAllocs(t *testing.T) {
	for name, h := range map[string]http.Header{
		"no fields": {},
		"legacy":    {"X-Ratelimit-Remaining": {"999999"}, "X-Ratelimit-Reset": {"1"}},
	} {
		tr, _ := New(Config{Transport: canned{h}})
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:8080/items/42", nil)
		n := testing.AllocsPerRun(1000, func() {
			sink, _ = tr.RoundTrip(req)
		})
		if n > 1 {
			t.Errorf("%s: %v allocations per request, want 1 (the base's response)", name, n)
		}
	}
}
