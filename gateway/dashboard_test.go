package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway/dashboard"
	"github.com/tollgate-dev/tollgate/gateway/dashfeed"
	"github.com/tollgate-dev/tollgate/gateway/observe"
	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/rules"
)

// dashRules limit each X-Key to 2 requests a minute.
// dashRules allow each key 2 requests, then refill one each half hour:
// a token bucket, so that no window boundary during a test gives a key 2
// more (a fixed window of 1m did, once, when a test straddled a minute).
const dashRules = `rules:
  - name: per-key
    key: header:X-Key
    policies: [{algorithm: token_bucket, rate: 2/h, burst: 2}]
`

// startDashGateway starts a gateway on loopback with dash as the admin
// listener's dashboard section.
func startDashGateway(t testing.TB, dash, yaml string) (*Gateway, string) {
	t.Helper()
	g := newTestGateway(t, `listen: {addr: "127.0.0.1:0"}
admin: {addr: "127.0.0.1:0", dashboard: {`+dash+`}}
reload: {watch: false}
`+yaml)
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	return g, "http://" + g.Addr().String()
}

// send makes n requests with key through the gateway at base and returns
// how many were refused.
func send(t *testing.T, base, key string, n int) int {
	t.Helper()
	refused := 0
	for range n {
		req, _ := http.NewRequest("GET", base+"/", nil)
		req.Header.Set("X-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			refused++
		}
	}
	return refused
}

// eventStream reads the dashboard's events.
type eventStream struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func openEvents(t *testing.T, g *Gateway) *eventStream {
	t.Helper()
	resp, err := http.Get("http://" + g.AdminAddr().String() + "/dashboard/events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	return &eventStream{resp: resp, sc: sc}
}

// next returns the next event's name and data.
func (s *eventStream) next(t *testing.T) (string, []byte) {
	t.Helper()
	var name string
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			return name, []byte(line[len("data: "):])
		}
	}
	t.Fatalf("event stream ended: %v", s.sc.Err())
	return "", nil
}

// frameWhere reads frames until ok accepts one, for at most 30 seconds.
func (s *eventStream) frameWhere(t *testing.T, ok func(*dashboard.Frame) bool) *dashboard.Frame {
	t.Helper()
	timer := time.AfterFunc(30*time.Second, func() { s.resp.Body.Close() })
	defer timer.Stop()
	for {
		name, data := s.next(t) // fails the test once the body is closed
		if name != dashboard.EventFrame {
			continue
		}
		var f dashboard.Frame
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		if ok(&f) {
			return &f
		}
	}
}

func findHitter(f *dashboard.Frame, rule, kind, key string) *dashboard.Hitter {
	for _, r := range f.Rules {
		if r.Rule != rule {
			continue
		}
		list := r.Volume
		if kind == "refused" {
			list = r.Refused
		}
		for i := range list {
			if list[i].Key == key {
				return &list[i]
			}
		}
	}
	return nil
}

// The event stream starts with the rules in words and the history, then
// sends a frame per period with the refused key on top of its rule's
// refusals, its remaining quota, the store's state and the decision rates.
func TestDashboardStreamsHeavyHittersAndRates(t *testing.T) {
	g, base := startDashGateway(t, "period: 100ms", dashRules)
	defer g.Close()
	ev := openEvents(t, g)
	name, data := ev.next(t)
	var h dashboard.Hello
	if err := json.Unmarshal(data, &h); name != dashboard.EventHello || err != nil {
		t.Fatalf("first event %s %s: %v", name, data, err)
	}
	if !strings.Contains(h.Words, "per-key") || !strings.Contains(h.Words, "key    header:X-Key") || h.Keys != "plain" || h.Capacity != 3000 {
		t.Fatalf("hello %+v", h)
	}
	if got := send(t, base, "flooder", 20); got != 18 {
		t.Fatalf("%d refused, want 18", got)
	}
	send(t, base, "calm", 1)
	f := ev.frameWhere(t, func(f *dashboard.Frame) bool {
		h := findHitter(f, "per-key", "refused", "flooder")
		return h != nil && h.Count == 18
	})
	if top := f.Rules[0].Refused[0]; top.Key != "flooder" || top.Remaining != 0 {
		t.Errorf("top refused %+v", top)
	}
	if c := findHitter(f, "per-key", "volume", "calm"); c == nil || c.Count != 1 || c.Remaining != 1 {
		t.Errorf("calm: %+v", c)
	}
	if findHitter(f, "per-key", "refused", "calm") != nil {
		t.Error("calm listed among the refused")
	}
	if r := f.Rules[0]; r.Requests != 21 || r.Refusals != 18 {
		t.Errorf("totals %d requests %d refusals", r.Requests, r.Refusals)
	}
	if len(f.Status) == 0 || f.Status[0].Name != "memory store" || !strings.Contains(f.Status[0].Fields[0].Value, "of 100000") {
		t.Errorf("status %+v", f.Status)
	}
	// Five more: the count advances, and a sample shows them as a rate.
	send(t, base, "flooder", 5)
	sawRate := false
	ev.frameWhere(t, func(f *dashboard.Frame) bool {
		for _, r := range f.Sample.Rates {
			if r.Rule == "per-key" && r.Refused > 0 {
				sawRate = true
			}
		}
		h := findHitter(f, "per-key", "refused", "flooder")
		return h != nil && h.Count == 23
	})
	for range 3 { // the rate of the last refusals may come a frame later
		if sawRate {
			break
		}
		ev.frameWhere(t, func(f *dashboard.Frame) bool {
			for _, r := range f.Sample.Rates {
				if r.Rule == "per-key" && r.Refused > 0 {
					sawRate = true
				}
			}
			return true
		})
	}
	if !sawRate {
		t.Error("no sample shows the refusals as a rate")
	}
}

// With keys: hash the dashboard shows the keyed hash, never the key; with
// truncate an address's /24.
func TestDashboardHidesKeys(t *testing.T) {
	for _, tc := range []struct{ mode, key, shown string }{
		{"hash", "secret-api-key", redact.Key("secret-api-key")},
		{"truncate", "secret-api-key", "secr…"},
		{"truncate", "203.0.113.77", "203.0.113.0/24"},
	} {
		t.Run(tc.mode+"/"+tc.key, func(t *testing.T) {
			g, base := startDashGateway(t, "period: 100ms, keys: "+tc.mode, dashRules)
			defer g.Close()
			ev := openEvents(t, g)
			send(t, base, tc.key, 3)
			f := ev.frameWhere(t, func(f *dashboard.Frame) bool { return len(f.Rules) > 0 && len(f.Rules[0].Refused) > 0 })
			if got := f.Rules[0].Refused[0].Key; got != tc.shown {
				t.Errorf("shown %q, want %q", got, tc.shown)
			}
			b, _ := json.Marshal(f)
			if strings.Contains(string(b), tc.key) {
				t.Errorf("frame carries the key %q: %s", tc.key, b)
			}
		})
	}
}

// The page and its files come from the binary with a policy that forbids
// loading anything from elsewhere; turned off, there is no page.
func TestDashboardPageServedAndSwitchedOff(t *testing.T) {
	g, _ := startDashGateway(t, "", "")
	defer g.Close()
	admin := "http://" + g.AdminAddr().String()
	for _, p := range []string{"/", "/dashboard/app.js", "/dashboard/style.css"} {
		resp, err := http.Get(admin + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("%s: %d, CSP %q", p, resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
		}
	}
	g2, _ := startDashGateway(t, "enabled: false", "")
	defer g2.Close()
	for _, p := range []string{"/", "/dashboard/events"} {
		resp, err := http.Get("http://" + g2.AdminAddr().String() + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("disabled %s: %d", p, resp.StatusCode)
		}
	}
}

// A gateway with neither the dashboard nor the refusal log observes with
// the metrics' own observer: nothing is added to the request path.
func TestNoDashboardNoRefusalLogAddsNothing(t *testing.T) {
	g := newTestGateway(t, dashRules+`admin: {dashboard: {enabled: false}}`)
	defer g.Close()
	if g.core.Snap.Load().Tops != nil {
		t.Fatal("heavy hitters kept with the dashboard off")
	}
	if _, ok := g.dash.ObserverOf(g.core.Snap.Load()).(*observe.Observer); !ok {
		t.Fatal("the engine's observer is not the metrics' own")
	}
}

// Feeding the heavy hitters and the refusal log allocates nothing for a
// returning key (the refusal log's lines aside, bounded per interval).
func TestWatchedObserverAllocatesNothing(t *testing.T) {
	dir := t.TempDir()
	g := newTestGateway(t, dashRules+`refusal_log: {path: `+filepath.Join(dir, "r.log")+`, max_lines: 1}
`)
	defer g.Close()
	w, ok := g.dash.ObserverOf(g.core.Snap.Load()).(*dashfeed.WatchedObserver)
	if !ok {
		t.Fatal("no watched observer")
	}
	ev := rules.Event{Rule: "per-key", RuleIndex: 0, Policy: "per-key", Outcome: rules.Refused, Decisive: true, Key: "hot"}
	w.Observe(ev) // the one line of the interval
	if n := testing.AllocsPerRun(1000, func() { w.Observe(ev) }); n != 0 {
		t.Fatalf("Observe allocates %.1f times", n)
	}
}

// The refusal log writes at most max_lines lines per interval, keys
// hashed, then a summary with the refusals it did not write.
func TestRefusalLogIsBoundedAndHidesKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "refusals.log")
	g, base := startTestGateway(t, dashRules+`refusal_log: {path: `+path+`, max_lines: 5, interval: 1h}
`)
	if got := send(t, base, "secret-key", 52); got != 50 {
		t.Fatalf("%d refused, want 50", got)
	}
	g.Close() // writes the last summary
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "secret-key") {
		t.Fatalf("the log carries the key:\n%s", b)
	}
	var lines, summaries int
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		switch m["msg"] {
		case "limiting requests":
			lines++
			if m["rule"] != "per-key" || m["key"] != redact.Key("secret-key") || m["limit"] != 2.0 || m["remaining"] != 0.0 {
				t.Errorf("line %s", l)
			}
		case "limiting requests: summary":
			summaries++
			if m["refused"] != 50.0 || m["logged"] != 5.0 {
				t.Errorf("summary %s", l)
			}
		default:
			t.Errorf("unexpected %s", l)
		}
	}
	if lines != 5 || summaries != 1 {
		t.Fatalf("%d lines, %d summaries:\n%s", lines, summaries, b)
	}
}

// Sampling writes one refusal in sample_every; text format is slog's.
func TestRefusalLogSamplesInText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.log")
	g, base := startTestGateway(t, dashRules+`refusal_log: {path: `+path+`, format: text, sample_every: 10, interval: 1h}
`)
	send(t, base, "k", 42) // 40 refused
	g.Close()
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), `msg="limiting requests" `); n != 4 {
		t.Fatalf("%d lines, want 4:\n%s", n, b)
	}
	if !strings.Contains(string(b), "refused=40 logged=4") {
		t.Fatalf("no summary:\n%s", b)
	}
}

// fixedStatus is a StatusProvider reporting one field.
type fixedStatus struct{ name, value string }

func (f fixedStatus) Status() dashboard.Status {
	return dashboard.Status{Name: f.name, Kind: "adaptive", Fields: []dashboard.Field{{Name: "factor", Value: f.value}}}
}

// On Redis the dashboard shows the Redis store's state and each eventual
// sync's lag, then what added providers report (as adaptive controllers
// and a gossip mesh will).
func TestDashboardShowsRedisEventualAndProviders(t *testing.T) {
	srv := redistest.Start(t)
	cfg, err := config.Parse("test.yaml", []byte(`listen: {addr: "127.0.0.1:0"}
admin: {addr: "127.0.0.1:0", dashboard: {period: 100ms}}
reload: {watch: false}
routes: [{path: /, upstream: demo}]
store: {redis: {url: "redis://`+srv.Addr+`", timeout: 2s}}
rules:
  - {name: strict-ip, consistency: strict, policies: [{rate: 100/s, burst: 100}]}
  - {name: eventual-ip, consistency: eventual, sync_interval: 200ms, policies: [{rate: 100/s, burst: 100}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	g.AddStatus(fixedStatus{"test controller", "0.75"})
	ev := openEvents(t, g)
	send(t, "http://"+g.Addr().String(), "k", 3)
	field := func(f *dashboard.Frame, status, name string) *dashboard.Field {
		for _, s := range f.Status {
			if s.Name == status {
				for i := range s.Fields {
					if s.Fields[i].Name == name {
						return &s.Fields[i]
					}
				}
			}
		}
		return nil
	}
	// A frame built before the three requests were decided may still be
	// in the stream: the first frame that shows Redis up and the sync
	// healthy is not yet bound to show their decisions. The dashboard
	// must show them within frameWhere's 30 s.
	ev.frameWhere(t, func(f *dashboard.Frame) bool {
		st, lag := field(f, "redis", "state"), field(f, "eventual sync every 200ms", "since the last good sync")
		d := field(f, "redis", "decisions")
		return st != nil && st.Value == "up" && lag != nil && !lag.Alert && d != nil && d.Value != "0"
	})
	f := ev.frameWhere(t, func(f *dashboard.Frame) bool {
		rt := field(f, "redis", "round trip")
		return rt != nil && rt.Value != "measuring"
	})
	if rt := field(f, "redis", "round trip"); rt == nil {
		t.Error("no redis round trip")
	} else if d, err := time.ParseDuration(rt.Value); err != nil || d <= 0 || d > 2*time.Second {
		t.Errorf("redis round trip %q (%v)", rt.Value, err)
	}
	if c := field(f, "test controller", "factor"); c == nil || c.Value != "0.75" {
		t.Errorf("provider %+v in %+v", c, f.Status)
	}
	srv.Kill()
	f = ev.frameWhere(t, func(f *dashboard.Frame) bool {
		lag := field(f, "eventual sync every 200ms", "since the last good sync")
		return lag != nil && lag.Alert
	})
	if fl := field(f, "eventual sync every 200ms", "failed"); fl == nil || fl.Value == "0" {
		t.Errorf("failed syncs %+v", fl)
	}
}

// A reload keeps the counts of a rule that kept its name and key, and
// drops those of a rule that is gone once the new rules serve.
func TestReloadKeepsHeavyHittersOfUnchangedRules(t *testing.T) {
	g, base := startDashGateway(t, "period: 100ms", dashRules+`  - {name: other, policies: [{rate: 100/s, burst: 100}]}
`)
	send(t, base, "kept", 4)
	cfg, err := config.Parse("test.yaml", []byte(`listen: {addr: "127.0.0.1:0"}
admin: {addr: "127.0.0.1:0", dashboard: {period: 100ms}}
reload: {watch: false}
`+dashRules))
	if err != nil {
		t.Fatal(err)
	}
	old := g.core.Snap.Load().Tops
	if err := g.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	tops := g.core.Snap.Load().Tops
	if len(tops) != 1 || tops[0] != old[0] || tops[0].Refusals.Total() != 2 {
		t.Fatalf("after reload: %d tops, same %v", len(tops), len(tops) > 0 && tops[0] == old[0])
	}
	g.dash.Sample(g.core.Snap.Load(), time.Now())
	g.dash.Hitters.Mu.Lock()
	n := len(g.dash.Hitters.ByID)
	g.dash.Hitters.Mu.Unlock()
	if n != 1 {
		t.Fatalf("%d rules' tops kept, want 1", n)
	}
}

// An open dashboard does not hold up a graceful shutdown: its stream ends
// first.
func TestShutdownEndsOpenDashboards(t *testing.T) {
	g, _ := startDashGateway(t, "period: 100ms", dashRules)
	ev := openEvents(t, g)
	ev.next(t) // hello
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := g.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 900*time.Millisecond {
		t.Fatalf("shutdown took %v with a page open", took)
	}
	for ev.sc.Scan() {
	}
}
