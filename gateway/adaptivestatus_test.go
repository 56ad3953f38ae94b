package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway/dashboard"
)

// The dashboard shows each adaptive controller (its factor, floor and
// fleet) and each route's gradient concurrency limit.
func TestDashboardShowsAdaptiveControllers(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer origin.Close()
	cfg, err := config.Parse("test.yaml", []byte(`listen: {addr: "127.0.0.1:0"}
admin: {addr: "127.0.0.1:0", dashboard: {period: 100ms}}
reload: {watch: false}
routes:
  - {path: /, upstream: "`+origin.URL+`", adaptive_concurrency: {min_concurrency: 2, max_concurrency: 50}}
adaptive:
  origin:
    upstream: "`+origin.URL+`"
    interval: 100ms
    floor: 20%
    signals: [{measure: error_rate, threshold: 5%, weight: "1"}]
rules:
  - {name: per-ip, policies: [{rate: 100/s, burst: 100, adaptive: origin}]}
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
	ev := openEvents(t, g)
	send(t, "http://"+g.Addr().String(), "k", 3)
	field := func(f *dashboard.Frame, status, name string) *dashboard.Field {
		for _, s := range f.Status {
			if s.Name == status && s.Kind == "adaptive" {
				for i := range s.Fields {
					if s.Fields[i].Name == name {
						return &s.Fields[i]
					}
				}
			}
		}
		return nil
	}
	f := ev.frameWhere(t, func(f *dashboard.Frame) bool {
		return field(f, "adaptive origin", "factor") != nil && field(f, "adaptive concurrency /", "limit") != nil
	})
	if v := field(f, "adaptive origin", "factor"); v.Value != "100%" || v.Alert {
		t.Errorf("factor %+v, want 100%% (a healthy origin)", v)
	}
	if v := field(f, "adaptive origin", "floor"); v == nil || v.Value != "20%" {
		t.Errorf("floor %+v", v)
	}
	if v := field(f, "adaptive origin", "shared with"); v == nil || v.Value != "this gateway alone" {
		t.Errorf("fleet %+v", v)
	}
	if v := field(f, "adaptive concurrency /", "bounds"); v == nil || v.Value != "2 to 50" {
		t.Errorf("bounds %+v", v)
	}
}
