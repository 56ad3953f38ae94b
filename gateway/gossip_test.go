package gateway

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway/dashboard"
)

// gossipRule is one gossip rule, 10 per minute per client, whose failure
// mode is closed.
const gossipRule = `routes: [{path: /, upstream: demo}]
rules:
  - name: api
    consistency: gossip
    on_error: closed
    policies: [{algorithm: fixed_window, limit: 10, window: 1m}]
`

// TestGossipGatewaysShareALimit: two gateways in one gossip fleet enforce
// one limit between them, and /metrics shows the fleet and its traffic.
func TestGossipGatewaysShareALimit(t *testing.T) {
	a, baseA := startTestGateway(t, "store: {gossip: {name: a, bind_port: 0, interval: 20ms}}\n"+gossipRule)
	seed := a.stores.Gossip().Addr()
	b, baseB := startTestGateway(t, fmt.Sprintf("store: {gossip: {name: b, bind_port: 0, interval: 20ms, seeds: [%q]}}\n", seed)+gossipRule)
	adminB := "http://" + b.AdminAddr().String()
	eventually(t, "b to be warm and ready", func() bool {
		code, _, _ := get(t, adminB+"/readyz", "")
		return code == 200
	})
	for i := range 6 {
		if code, _, _ := get(t, baseA+"/", ""); code != 200 {
			t.Fatalf("a, request %d: %d", i, code)
		}
	}
	eventually(t, "b to hear of a's 6", func() bool {
		_, body, _ := get(t, adminB+"/metrics", "")
		return strings.Contains(body, "tollgate_gossip_keys 1")
	})
	eventually(t, "b's view to reach 6", func() bool {
		return b.stores.Gossip().Stats().OldestUnsent == 0 && a.stores.Gossip().Stats().OldestUnsent == 0
	})
	admitted := 0
	for range 10 {
		code, _, _ := get(t, baseB+"/", "")
		if code == 200 {
			admitted++
		} else if code != 429 {
			t.Fatalf("b answered %d", code)
		}
	}
	if admitted > 4+1 || admitted < 4 {
		t.Fatalf("b admitted %d after a's 6; want 4 (one round in flight: 5)", admitted)
	}
	_, body, _ := get(t, adminB+"/metrics", "")
	for _, want := range []string{
		`tollgate_gossip_members{state="alive"} 2`,
		`tollgate_gossip_members{state="suspect"} 0`,
		`tollgate_gossip_members{state="dead"} 0`,
		"tollgate_gossip_warm 1",
		`tollgate_gossip_dropped_total{reason="decode"} 0`,
		`tollgate_gossip_dropped_total{reason="key"} 0`,
		`tollgate_gossip_dropped_total{reason="absurd"} 0`,
		`tollgate_gossip_cold_decisions_total{mode="closed"} 0`,
		"tollgate_gossip_merge_lag_seconds",
		"tollgate_gossip_oldest_unsent_seconds",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("b's /metrics lacks %q", want)
		}
	}
	if strings.Contains(body, `tollgate_gossip_bytes_total{direction="received",kind="delta"} 0`) {
		t.Error("b counted no delta bytes received")
	}
	eventually(t, "b's round to send its 4", func() bool {
		_, body, _ := get(t, adminB+"/metrics", "")
		return strings.Contains(body, `tollgate_gossip_bytes_total{direction="sent",kind="delta"}`) &&
			!strings.Contains(body, `tollgate_gossip_bytes_total{direction="sent",kind="delta"} 0`)
	})
}

// TestAColdGossipGatewayAnswersByItsFailureMode: a gateway whose seeds
// never answer is not warm: its closed gossip rule refuses (503, the
// store-failure answer) and /readyz says why.
func TestAColdGossipGatewayAnswersByItsFailureMode(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	g, base := startTestGateway(t, fmt.Sprintf("store: {gossip: {name: cold, bind_port: 0, seeds: [%q]}}\n", l.Addr().String())+gossipRule)
	if code, _, _ := get(t, base+"/", ""); code != 503 {
		t.Fatalf("a cold gateway's closed gossip rule answered %d, want 503", code)
	}
	admin := "http://" + g.AdminAddr().String()
	code, body, _ := get(t, admin+"/readyz", "")
	if code != 503 || !strings.Contains(body, "gossip is not warm") || !strings.Contains(body, "api") {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	_, body, _ = get(t, admin+"/metrics", "")
	for _, want := range []string{"tollgate_gossip_warm 0", `tollgate_gossip_cold_decisions_total{mode="closed"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// The dashboard shows the gossip node: warm, its members, its keys.
func TestDashboardShowsTheGossipNode(t *testing.T) {
	cfg, err := config.Parse("test.yaml", []byte(`listen: {addr: "127.0.0.1:0"}
admin: {addr: "127.0.0.1:0", dashboard: {period: 100ms}}
reload: {watch: false}
store: {gossip: {name: dash, bind_port: 0, interval: 20ms}}
`+gossipRule))
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
	name := "gossip node dash on " + g.stores.Gossip().Addr()
	field := func(f *dashboard.Frame, field string) string {
		for _, s := range f.Status {
			if s.Name == name {
				for _, fl := range s.Fields {
					if fl.Name == field {
						return fl.Value
					}
				}
			}
		}
		return ""
	}
	ev.frameWhere(t, func(f *dashboard.Frame) bool {
		return field(f, "state") == "warm" && field(f, "members alive") == "1" && field(f, "keys") == "1"
	})
}
