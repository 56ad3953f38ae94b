package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/gateway/dashboard"
	"github.com/tollgate-dev/tollgate/internal/redact"
)

// metricValue is the counter name{labels} (labels as name=value pairs),
// or -1 when the series does not exist.
func metricValue(g *Gateway, name string, labels ...string) float64 {
	mfs, _ := g.core.M.Reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if l[labels[i]] != labels[i+1] {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

// failingOrigin answers 401 to every request but those with X-Password:
// right (200), and counts what it saw.
func failingOrigin(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("X-Password") == "right" {
			io.WriteString(w, "welcome")
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

// loginRule counts only 401s: a burst of 3, one more each 20s (a token
// bucket: no window boundary in a test), per X-Key, then a 15-minute
// penalty.
const loginRule = `rules:
  - name: login
    key: header:X-Key
    count: {statuses: ["401"]}
    policies: [{name: failed, algorithm: token_bucket, rate: 3/m, burst: 3, penalty: 15m}]
`

// A counting rule with a penalty through the gateway, on both data
// paths: correct logins are never charged, the fourth wrong one is
// refused with the penalty's Retry-After and not proxied; the metrics
// count the answers counted, the penalty started and the refusals under
// it; the refusal log says "penalty" with the time left, the key hashed;
// the dashboard lists the penalty in force, its key as configured.
func TestCountingPenaltyMetricsLogAndDashboard(t *testing.T) {
	for _, h2 := range []string{"off", "on"} {
		t.Run("http2 "+h2, func(t *testing.T) {
			srv, seen := failingOrigin(t)
			path := filepath.Join(t.TempDir(), "refusals.log")
			g := newTestGateway(t, `listen: {addr: "127.0.0.1:0", http2: `+h2+`}
admin: {addr: "127.0.0.1:0", dashboard: {period: 100ms, keys: hash}}
reload: {watch: false}
routes: [{path: /, upstream: "`+srv.URL+`"}]
refusal_log: {path: `+path+`, max_lines: 100, interval: 1h}
`+loginRule)
			if err := g.Start(); err != nil {
				t.Fatal(err)
			}
			base := "http://" + g.Addr().String()
			ev := openEvents(t, g)
			login := func(pw string) (int, http.Header) {
				req, _ := http.NewRequest("POST", base+"/login", strings.NewReader("u=a"))
				req.Header.Set("X-Key", "mallory")
				req.Header.Set("X-Password", pw)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode, resp.Header
			}
			for i := range 5 {
				if code, _ := login("right"); code != 200 {
					t.Fatalf("correct login %d: %d; want 200, never charged", i+1, code)
				}
			}
			var codes []int
			var ra []string
			for range 6 {
				code, h := login("wrong")
				codes = append(codes, code)
				ra = append(ra, h.Get("Retry-After"))
			}
			if got := fmtInts(codes); got != "[401 401 401 429 429 429]" {
				t.Fatalf("wrong logins answered %s; want three 401s then the refusals", got)
			}
			for i := 3; i < 6; i++ {
				if n, _ := strconv.Atoi(ra[i]); n < 15*60-30 || n > 15*60 {
					t.Fatalf("refusal %d: Retry-After %q; want the penalty's ~900", i-2, ra[i])
				}
			}
			if code, _ := login("right"); code != 429 {
				t.Fatalf("a correct password under the penalty: %d; want 429 (the key's penalty)", code)
			}
			if n := seen.Load(); n != 5+3 {
				t.Fatalf("the origin saw %d requests; want 8 (no refusal proxied)", n)
			}

			if v := metricValue(g, "tollgate_counted_total", "rule", "login"); v != 3 {
				t.Errorf("tollgate_counted_total = %v; want 3 (the 401s)", v)
			}
			if v := metricValue(g, "tollgate_penalties_total", "rule", "login"); v != 1 {
				t.Errorf("tollgate_penalties_total = %v; want 1", v)
			}
			// The refusal that started the penalty, then three under it.
			if v := metricValue(g, "tollgate_penalty_refusals_total", "rule", "login", "policy", "failed"); v != 3 {
				t.Errorf("tollgate_penalty_refusals_total = %v; want 3", v)
			}
			if v := decisionCount(g, "login", "failed", "refused"); v != 4 {
				t.Errorf("refused decisions %v; want 4", v)
			}

			f := ev.frameWhere(t, func(f *dashboard.Frame) bool { return len(f.Penalties) > 0 })
			// The heavy hitters count each request once: a charge after
			// the answer is not one more request.
			if h := findHitter(f, "login", "volume", redact.Key("mallory")); h == nil || h.Count != 12 {
				t.Errorf("mallory's requests on the dashboard: %+v; want 12 (5 correct, 6 wrong, 1 refused correct)", h)
			}
			p := f.Penalties[0]
			if len(f.Penalties) != 1 || p.Rule != "login" || p.Policy != "failed" || p.Key != redact.Key("mallory") ||
				p.Left < 15*60-30 || p.Left > 15*60 {
				t.Fatalf("penalties in force %+v; want login/failed, the key hashed, ~900 s left", f.Penalties)
			}

			g.Close() // flushes the refusal log
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "mallory") {
				t.Fatalf("the refusal log carries the key:\n%s", b)
			}
			var started, under int
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("%q: %v", l, err)
				}
				if m["msg"] != "limiting requests" {
					continue
				}
				pen, _ := m["penalty"].(string)
				if m["policy"] != "failed" || !strings.HasPrefix(pen, "14m") && pen != "15m0s" {
					t.Errorf("refusal line without the penalty's time left: %s", l)
				}
				if m["penalty_started"] == true {
					started++
				} else {
					under++
				}
			}
			if started != 1 || under != 3 {
				t.Errorf("%d lines starting the penalty, %d under it; want 1 and 3:\n%s", started, under, b)
			}
		})
	}
}

func fmtInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return "[" + strings.Join(s, " ") + "]"
}
