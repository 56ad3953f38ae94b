package main

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// Three gateway processes share an adaptive controller's factor through
// Redis. Only the first one proxies to the origin (and so sees it
// degrade); the time from the origin's degradation to the moment the
// last of the three applies a tightened limit is measured: at most 5s is
// required, 1s the goal.
func TestAdaptiveFleetTightensTogether(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three gateway processes")
	}
	rs := redistest.Start(t)
	store := `store: {redis: {url: "redis://` + rs.Addr + `", prefix: "fleet:", timeout: 500ms}}` + "\n"
	fleetTightening(t, "redis", func(int) string { return store }, nil)
}

// The same through gossip: the three processes are a store.gossip fleet
// and share the factor over memberlist (fleet: gossip).
func TestAdaptiveGossipFleetTightensTogether(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three gateway processes")
	}
	ports := []int{gossipPort(t), gossipPort(t), gossipPort(t)}
	store := func(i int) string { return gossipNode(i, ports, ", bind_addr: 127.0.0.1") }
	var fleet []*proc
	fleetTightening(t, "gossip", store, func(nodes []*proc) {
		fleet = nodes
		for _, p := range nodes {
			eventually(t, p.admin+" to list 3 members", func() bool { return p.metric(`tollgate_gossip_members{state="alive"}`) == "3" })
		}
	})
	for _, p := range fleet {
		if d := p.metric(`tollgate_gossip_dropped_total{reason="value"}`); d != "0" {
			t.Errorf("%s dropped %s shared values, want 0", p.admin, d)
		}
	}
}

// fleetTightening runs three gateways sharing an adaptive controller's
// factor through fleet (store(i) is node i's store section; ready, when
// set, waits until the fleet is formed), degrades the origin that only
// the first one proxies to, and measures the time until the last of the
// three applies a tightened limit.
func fleetTightening(t *testing.T, fleet string, store func(i int) string, ready func([]*proc)) {
	var degraded atomic.Bool
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cpu := "10"
		if degraded.Load() {
			cpu = "95"
		}
		w.Header().Set("X-Origin-Cpu", cpu)
		w.Write([]byte("ok"))
	}))
	defer origin.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer other.Close()
	cfg := `listen: {addr: "127.0.0.1:0"}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
routes:
  - {path: /, upstream: "` + origin.URL + `"}
  - {path: /probe/, upstream: "` + other.URL + `"}
headers: {styles: [legacy]}
adaptive:
  origin:
    upstream: "` + origin.URL + `"
    interval: 200ms
    fleet: ` + fleet + `
    signals:
      - {measure: header, header: X-Origin-Cpu, threshold: "80"}
rules:
  - name: all
    key: global
    policies:
      - {rate: 100000/s, burst: 1000, adaptive: origin}
`
	var nodes [3]*proc
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() { nodes[i] = startServe(t, store(i)+cfg) })
	}
	wg.Wait()
	if ready != nil {
		ready(nodes[:])
	}
	// Traffic to the origin through node 0 only.
	stop := make(chan struct{})
	var traffic sync.WaitGroup
	traffic.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if resp, err := http.Get(nodes[0].url("/x")); err == nil {
				resp.Body.Close()
			}
		}
	})
	defer func() { close(stop); traffic.Wait() }()
	// limitOf reads the limit a node applies now, from a request that
	// does not reach the origin.
	limitOf := func(p *proc) int64 {
		resp, err := http.Get(p.url("/probe/x"))
		if err != nil {
			return -1
		}
		resp.Body.Close()
		n, err := strconv.ParseInt(resp.Header.Get("X-Ratelimit-Limit"), 10, 64)
		if err != nil {
			return -1
		}
		return n
	}
	time.Sleep(600 * time.Millisecond) // a few healthy intervals
	for i, p := range nodes {
		if l := limitOf(p); l != 1000 {
			t.Fatalf("node %d applies %d before the degradation, want the base 1000", i, l)
		}
	}
	start := time.Now()
	degraded.Store(true)
	var took [3]time.Duration
	var probes sync.WaitGroup
	for i, p := range nodes {
		probes.Go(func() {
			for time.Since(start) < 10*time.Second {
				if l := limitOf(p); l > 0 && l < 1000 {
					took[i] = time.Since(start)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	probes.Wait()
	sorted := append([]time.Duration(nil), took[:]...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a] < sorted[b] })
	t.Logf("fleet %s: origin degraded → nodes tightened after %v, %v, %v (last: %v; interval 200ms, fleet poll 50ms)",
		fleet, took[0], took[1], took[2], sorted[2])
	for i, d := range took {
		if d == 0 {
			t.Fatalf("node %d never tightened within 10s", i)
		}
	}
	if sorted[2] > 5*time.Second {
		t.Fatalf("the last node tightened %v after the degradation, want at most 5s", sorted[2])
	}
}
