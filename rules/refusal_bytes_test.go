package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/racebuild"
)

// The refusal built from compiled parts is byte for byte the one the
// engine wrote when it built every part per request, for default, custom
// and escaped texts, store failures, requests that can never pass, and
// paths with every byte value.
func TestRefusalBytesUnchanged(t *testing.T) {
	var paths = []string{"/", "/items/42", "/a&b<c>\"d\\e", "/x\"y\xff", "/ü/\u2028"}
	var all []byte
	for c := 1; c < 256; c++ {
		all = append(all, byte(c))
	}
	paths = append(paths, "/"+string(all))
	configs := []Config{
		{Rules: []Rule{{Name: "one", Policies: []Policy{{Algorithm: "fixed_window", Limit: 1, Window: "30s"}}}}},
		{Rules: []Rule{{Name: "one", Policies: []Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1s"}}}}},
		{Refusal: Refusal{Status: 403, Type: "https://example.com/probs/<slow>", Title: "Quota \"exceeded\"", Detail: "ünïcode <b> & \x01\u2028"},
			Rules: []Rule{{Name: "a.b-c_d", Policies: []Policy{{Algorithm: "sliding_window", Limit: 1, Window: "1h"}}}}},
		{Rules: []Rule{{Name: "small", Policies: []Policy{{Algorithm: "fixed_window", Limit: 3, Window: "1m"}}, Cost: Cost{Default: 5}}}},
		{Rules: []Rule{{Name: "two", Policies: []Policy{{Rate: "1000/s"}, {Name: "slow", Algorithm: "fixed_window", Limit: 1, Window: "1m"}}}}},
		{Refusal: Refusal{Body: "slow down: {{.RetryAfter}}s {{.Path}}\n"},
			Rules: []Rule{{Name: "one", Policies: []Policy{{Algorithm: "fixed_window", Limit: 1, Window: "30s"}}}}},
		{Refusal: Refusal{Body: "{{.Missing}}"},
			Rules: []Rule{{Name: "one", Policies: []Policy{{Algorithm: "fixed_window", Limit: 1, Window: "30s"}}}}},
	}
	check := func(res *Result) {
		t.Helper()
		want := res.refusalReference()
		got := res.Refusal()
		var buf [512]byte
		appended := res.AppendRefusal(buf[:3])
		if got.Status != want.Status || got.ContentType != want.ContentType || !bytes.Equal(got.Body, want.Body) ||
			!bytes.Equal(appended.Body[3:], want.Body) {
			t.Fatalf("refusal\n%d %s %q\nwant\n%d %s %q", got.Status, got.ContentType, got.Body, want.Status, want.ContentType, want.Body)
		}
		if want.ContentType == ContentTypeProblem && !json.Valid(got.Body) {
			t.Fatalf("invalid JSON %q", got.Body)
		}
	}
	for _, cfg := range configs {
		for _, p := range paths {
			e, _ := newEngine(t, cfg)
			var res Result
			for range 3 {
				res = decide(t, e, get(p, "192.0.2.1"))
			}
			if res.Outcome != Refused {
				t.Fatalf("%+v %q: %v", cfg.Rules, p, res.Outcome)
			}
			check(&res)
		}
	}
	for _, st := range []int{0, 503, 500} {
		e, err := New(Config{OnError: "closed", Refusal: Refusal{ErrorStatus: st},
			Rules: []Rule{{Name: "r", Policies: oneRate}}}, failingStore{})
		if err != nil {
			t.Fatal(err)
		}
		res, _ := e.Decide(context.Background(), get("/a b", "192.0.2.1"))
		check(&res)
	}
}

// With room in the buffer, the default refusal body costs no allocation.
func TestAppendRefusalDoesNotAllocate(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	e, _ := newEngine(t, Config{Rules: []Rule{{Name: "per-ip", Policies: []Policy{{Rate: "1/h"}}}}})
	decide(t, e, get("/items/42", "192.0.2.1"))
	res := decide(t, e, get("/items/42", "192.0.2.1"))
	var buf [512]byte
	n := testing.AllocsPerRun(1000, func() { res.AppendRefusal(buf[:0]) })
	if n != 0 {
		t.Fatalf("%v allocations per refusal body, want 0", n)
	}
}

// AppendRawHeaders gives the fields of AppendHeaders, in the same order,
// for every style at once, on allowed and refused requests, without
// allocating.
func TestAppendRawHeaders(t *testing.T) {
	e, _ := newEngine(t, Config{
		Headers: Headers{Styles: []string{StyleDraft10, StyleDraft6, StyleLegacy}},
		Rules: []Rule{
			{Name: "a", Policies: []Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1m"}, {Rate: "100/s"}}},
			{Name: "s", Shadow: true, ShadowHeaders: true, Policies: []Policy{{Rate: "1/h"}}},
		},
	})
	for i := range 3 {
		res := decide(t, e, get("/", "192.0.2.1"))
		want := res.AppendHeaders(nil)
		var hs [10]RawHeader
		var buf [128]byte
		raw, vals := res.AppendRawHeaders(hs[:0], buf[:0])
		if len(raw) != len(want) {
			t.Fatalf("request %d: %d fields, want %d", i, len(raw), len(want))
		}
		for j, h := range raw {
			v := h.Value
			if h.End > 0 {
				v = string(vals[h.Start:h.End])
			}
			if h.Name != want[j].Name || v != want[j].Value {
				t.Fatalf("request %d field %d: %s: %s, want %s: %s", i, j, h.Name, v, want[j].Name, want[j].Value)
			}
		}
		if i == 2 && res.Outcome != Refused {
			t.Fatalf("third request %v", res.Outcome)
		}
		if racebuild.Enabled {
			continue
		}
		if n := testing.AllocsPerRun(100, func() { res.AppendRawHeaders(hs[:0], buf[:0]) }); n != 0 {
			t.Fatalf("request %d: %v allocations", i, n)
		}
	}
}

// AppendProblem writes valid JSON whatever its title and detail hold, and
// the same opening the engine's refusals have.
func TestAppendProblem(t *testing.T) {
	b := AppendProblem(nil, 400, `Bad "Request"`, "X-Field\n: <bad> \xff")
	var p struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if p.Type != "about:blank" || p.Title != `Bad "Request"` || p.Status != 400 || p.Detail != "X-Field\n: <bad> \ufffd" {
		t.Errorf("%s read as %+v", b, p)
	}
}
