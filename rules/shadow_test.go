package rules

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

type events struct {
	mu   sync.Mutex
	list []Event
}

func (e *events) Observe(ev Event) {
	e.mu.Lock()
	e.list = append(e.list, ev)
	e.mu.Unlock()
}

func TestShadowNeverRefusesButCountsAndReports(t *testing.T) {
	var log bytes.Buffer
	obs := &events{}
	e, _ := newEngine(t, Config{
		Observer: obs,
		Logger:   slog.New(slog.NewTextHandler(&log, nil)),
		Rules: []Rule{{
			Name: "trial", Shadow: true,
			Policies: []Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1m"}},
		}},
	})
	for i := 0; i < 3; i++ {
		res := decide(t, e, get("/", "192.0.2.1"))
		if res.Outcome != Allowed || res.Refused() {
			t.Fatalf("request %d: %v", i, res.Outcome)
		}
		if h := headers(&res); len(h) != 0 {
			t.Fatalf("shadow rule without shadow_headers sent %v", h)
		}
	}
	var outs []string
	for _, ev := range obs.list {
		outs = append(outs, ev.Outcome.String())
	}
	if got := strings.Join(outs, ","); got != "shadow_allowed,shadow_refused,shadow_refused" {
		t.Fatalf("observed %s", got)
	}
	if n := strings.Count(log.String(), "shadow refusal"); n != 2 || !strings.Contains(log.String(), "rule=trial") || strings.Contains(log.String(), "192.0.2.1") {
		t.Fatalf("log:\n%s", log.String())
	}
}

func TestShadowDoesNotBlockEnforcedCharging(t *testing.T) {
	// A shadow rule that refuses must not stop an enforced rule from
	// charging (they are separate all-or-nothing groups), and an enforced
	// refusal still refuses.
	e, _ := newEngine(t, Config{Rules: []Rule{
		{Name: "trial", Shadow: true, ShadowHeaders: true, Policies: []Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1m"}}},
		{Name: "real", Policies: []Policy{{Algorithm: "fixed_window", Limit: 3, Window: "1m"}}},
	}})
	var rem []int64
	for i := 0; i < 4; i++ {
		res := decide(t, e, get("/", "192.0.2.1"))
		rem = append(rem, res.Decision.Remaining)
		if i == 3 && res.Outcome != Refused {
			t.Fatalf("4th: %v", res.Outcome)
		}
		if i == 1 {
			h := headers(&res)
			if h[HeaderRateLimitPolicy] != `"real";q=3;w=60, "trial";q=1;w=60` || h[HeaderRateLimit] != `"real";r=1;t=60` {
				t.Fatalf("headers %v", h)
			}
		}
	}
	if rem[0] != 2 || rem[1] != 1 || rem[2] != 0 {
		t.Fatalf("enforced remaining %v", rem)
	}
}

func TestObserverMultiPolicy(t *testing.T) {
	obs := &events{}
	e, _ := newEngine(t, Config{Observer: obs, Rules: []Rule{
		{Name: "burst", Policies: []Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1s"}}},
		{Name: "daily", Policies: []Policy{{Algorithm: "fixed_window", Limit: 1000, Window: "1d"}}},
	}})
	for i := 0; i < 3; i++ {
		decide(t, e, get("/", "192.0.2.1"))
	}
	if len(obs.list) != 6 {
		t.Fatalf("%d events, want 2 per request", len(obs.list))
	}
	// The refusal is burst's; daily was not charged for it.
	last := obs.list[4:]
	if last[0].Rule != "burst" || last[0].Outcome != Refused || !last[0].Decisive || last[1].Rule != "daily" || last[1].Decisive || last[1].Outcome != NotCharged {
		t.Fatalf("events %+v", last)
	}
}
