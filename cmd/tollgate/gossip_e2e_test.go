package main

import (
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The gossip fleet test's traffic, settable to rerun it with other
// figures (BENCHMARKS.md, "gossip tier: three real processes"):
//
//	go test ./cmd/tollgate -run TestE2EGossipFleet -v -gossip.rate 200 -gossip.interval 50ms
var (
	gossipRate     = flag.Float64("gossip.rate", 100, "gossip fleet test: requests per second sent to each node")
	gossipInterval = flag.Duration("gossip.interval", 100*time.Millisecond, "gossip fleet test: store.gossip.interval")
	gossipLimit    = flag.Int("gossip.limit", 300, "gossip fleet test: the rule's limit per key (fixed window of 1h)")
	gossipPhase    = flag.Duration("gossip.phase", 2*time.Second, "gossip fleet test: how long each phase's traffic lasts")
)

// gossipPort returns a loopback port free for both TCP and UDP, for a
// node's gossip (memberlist binds both).
func gossipPort(t *testing.T) int {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		ln.Close()
		if err == nil {
			pc.Close()
			return port
		}
	}
	t.Fatal("no port free for TCP and UDP")
	return 0
}

// gossipNode is node i's store section in a fleet gossiping on ports,
// each node seeded with them all, with extra (", key: value" pairs)
// added to its gossip mapping.
func gossipNode(i int, ports []int, extra string) string {
	seeds := make([]string, len(ports))
	for j, p := range ports {
		seeds[j] = strconv.Quote(fmt.Sprintf("127.0.0.1:%d", p))
	}
	return fmt.Sprintf("store:\n  gossip: {name: n%d, bind_port: %d, seeds: [%s]%s}\n", i, ports[i], strings.Join(seeds, ", "), extra)
}

// fleetRule is the rules section the fleet tests count under: one rule,
// fleet, keyed by path at the gossip tier (closed on a store error),
// limit requests per window.
func fleetRule(limit int, window string) string {
	return fmt.Sprintf(`rules:
  - name: fleet
    key: path
    consistency: gossip
    on_error: closed
    policies: [{algorithm: fixed_window, limit: %d, window: %s}]
`, limit, window)
}

// load is what steady traffic met on one node.
type load struct {
	sent, admitted, refused, cold, other, failed int
}

// steady sends rate requests per second for d to each node, GET path, one
// sender per node paced by a ticker; it calls at(elapsed) after each tick
// of the first sender, to act mid-traffic. A node that stops answering
// (killed) counts its requests as failed.
func steady(ps []*proc, path string, rate float64, d time.Duration, at func(time.Duration)) ([]load, time.Duration) {
	return steadyAtLeast(ps, path, rate, d, 0, at)
}

// steadyAtLeast is steady that goes on past d, up to 4 × d, until the
// nodes have answered atLeast requests together: on a machine too loaded
// to send at rate, a phase meant to use up a limit still does.
func steadyAtLeast(ps []*proc, path string, rate float64, d time.Duration, atLeast int, at func(time.Duration)) ([]load, time.Duration) {
	out := make([]load, len(ps))
	var answered atomic.Int64
	c := &http.Client{Timeout: 2 * time.Second}
	var wg sync.WaitGroup
	start := time.Now()
	for i, p := range ps {
		wg.Go(func() {
			tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
			defer tick.Stop()
			l := &out[i]
			for now := range tick.C {
				el := now.Sub(start)
				if el >= d && (answered.Load() >= int64(atLeast) || el >= 4*d) {
					return
				}
				if i == 0 && at != nil {
					at(el)
				}
				l.sent++
				resp, err := c.Get(p.url(path))
				if err != nil {
					l.failed++
					continue
				}
				resp.Body.Close()
				answered.Add(1)
				switch resp.StatusCode {
				case 200:
					l.admitted++
				case 429:
					l.refused++
				case 503:
					l.cold++
				default:
					l.other++
				}
			}
		})
	}
	wg.Wait()
	return out, time.Since(start)
}

// total adds up the loads.
func total(ls []load) load {
	var t load
	for _, l := range ls {
		t.sent += l.sent
		t.admitted += l.admitted
		t.refused += l.refused
		t.cold += l.cold
		t.other += l.other
		t.failed += l.failed
	}
	return t
}

// TestE2EGossipFleet runs three real tollgate serve processes gossiping
// on loopback (encrypted, the key from an environment variable), one
// gossip rule (fixed window, closed failure mode) keyed by path, and
// steady traffic spread evenly over them:
//
//  1. the fleet admits at least the limit and at most the limit plus
//     nodes × per-node rate × (interval + one more for the hop and the
//     scheduling of a loaded machine);
//  2. one node is killed (SIGKILL) mid-traffic: the other two go on,
//     answering every request, and the fleet's count stays within the
//     same bound, the dead node's admissions still counting;
//  3. it restarts under its name while the other two are stopped
//     (SIGSTOP): it serves at once but is cold, so its gossip rule
//     answers by its failure mode (503) and /readyz says so; once they
//     continue it warms up from them, and then decides: it refuses the
//     keys the fleet used up;
//  4. the fleet of three, whole again, holds the bound on a new key.
//
// Each phase's figures are logged (go test -v) for BENCHMARKS.md.
func TestE2EGossipFleet(t *testing.T) {
	tollgateBinary(t)
	if until := time.Until(time.Now().Truncate(time.Hour).Add(time.Hour)); until < time.Minute {
		t.Logf("waiting %v for the next hour's window", until)
		time.Sleep(until + time.Second)
	}
	rate, iv, limit, phase := *gossipRate, *gossipInterval, *gossipLimit, *gossipPhase
	key := hex.EncodeToString([]byte("e2e gossip key32")) // 16 bytes
	ports := []int{gossipPort(t), gossipPort(t), gossipPort(t)}
	cfgOf := func(i int) string {
		return baseCfg + "routes: [{path: /, upstream: demo}]\n" +
			gossipNode(i, ports, fmt.Sprintf(", interval: %v, secret_key_env: TOLLGATE_E2E_GOSSIP_KEY", iv)) +
			fleetRule(limit, "1h")
	}
	env := "TOLLGATE_E2E_GOSSIP_KEY=" + key
	nodes := []*proc{startServeEnv(t, cfgOf(0), env), startServeEnv(t, cfgOf(1), env), startServeEnv(t, cfgOf(2), env)}
	for _, p := range nodes {
		eventually(t, p.admin+" to list 3 members", func() bool { return p.metric(`tollgate_gossip_members{state="alive"}`) == "3" })
	}
	for _, p := range nodes {
		if strings.Contains(p.logText(), key) {
			t.Fatal("a log shows the secret key")
		}
	}

	// check checks a phase's count against the formula and logs it.
	// The per-node rate is the one measured on the nodes that answered
	// throughout.
	check := func(name string, ls []load, took time.Duration, live int) load {
		t.Helper()
		tot := total(ls)
		var perNode float64
		n := 0
		for _, l := range ls {
			if l.failed == 0 {
				perNode += float64(l.sent) / took.Seconds()
				n++
			}
		}
		perNode /= float64(n)
		bound := float64(limit) + float64(len(nodes))*perNode*(2*iv).Seconds()
		over := tot.admitted - limit
		t.Logf("%s: %d nodes × %.0f req/s for %v, interval %v: admitted %d of limit %d, overshoot %d (%.1f%% of the limit; formula nodes × rate × interval = %.0f, bound with the hop %.0f); per node %+v",
			name, live, perNode, took.Round(time.Millisecond), iv, tot.admitted, limit, over, 100*float64(over)/float64(limit),
			float64(len(nodes))*perNode*iv.Seconds(), bound-float64(limit), ls)
		if tot.admitted < limit || float64(tot.admitted) > bound {
			t.Errorf("%s: admitted %d, want %d to %.0f", name, tot.admitted, limit, bound)
		}
		if tot.other != 0 || tot.cold != 0 {
			t.Errorf("%s: %d cold answers, %d other statuses", name, tot.cold, tot.other)
		}
		return tot
	}

	// 1. Steady traffic over the three.
	ls, took := steadyAtLeast(nodes, "/one", rate, phase, limit+limit/4, nil)
	if total(ls).failed != 0 {
		t.Fatalf("failed requests: %+v", ls)
	}
	check("three nodes", ls, took, 3)

	// 2. Kill n2 mid-traffic; n0 and n1 go on.
	var killOnce sync.Once
	killAt := phase / 4
	ls, took = steadyAtLeast(nodes, "/two", rate, phase, limit+limit/4, func(el time.Duration) {
		if el >= killAt {
			killOnce.Do(func() { nodes[2].cmd.Process.Kill() })
		}
	})
	if ls[0].failed+ls[1].failed != 0 {
		t.Fatalf("the two live nodes failed requests: %+v", ls)
	}
	check("n2 killed at "+killAt.String(), ls, took, 3)
	nodes[2].wait(10 * time.Second)
	for _, p := range nodes[:2] {
		eventually(t, p.admin+" to find n2 dead", func() bool { return p.metric(`tollgate_gossip_members{state="dead"}`) == "1" })
	}
	// Its admissions keep counting on the others: the key stays used up.
	for _, p := range nodes[:2] {
		if resp, _ := get(t, p.url("/two")); resp.StatusCode != 429 {
			t.Fatalf("%s after n2 died: %d, want 429 (n2's share still counting)", p.addr, resp.StatusCode)
		}
	}

	// 3. n2 restarts while n0 and n1 are stopped: cold, it answers by its
	// failure mode; warm once they continue, it decides on the fleet's
	// counts.
	for _, p := range nodes[:2] {
		p.signal(syscall.SIGSTOP)
	}
	stopped := true
	cont := func() {
		if stopped {
			for _, p := range nodes[:2] {
				p.signal(syscall.SIGCONT)
			}
			stopped = false
		}
	}
	t.Cleanup(cont)
	n2 := startServeEnv(t, cfgOf(2), env)
	nodes[2] = n2
	for range 3 {
		if resp, _ := get(t, n2.url("/fresh")); resp.StatusCode != 503 {
			t.Fatalf("n2 cold: %d, want 503 (its gossip rule's failure mode, closed)", resp.StatusCode)
		}
	}
	if resp, body := get(t, "http://"+n2.admin+"/readyz"); resp.StatusCode != 503 || !strings.Contains(body, "gossip is not warm") {
		t.Fatalf("n2 cold /readyz: %d %q", resp.StatusCode, body)
	}
	if got := n2.metric(`tollgate_gossip_cold_decisions_total{mode="closed"}`); got != "3" {
		t.Fatalf("n2 cold decisions: %s, want 3", got)
	}
	cont()
	eventually(t, "n2 to warm up", func() bool {
		resp, _ := get(t, "http://"+n2.admin+"/readyz")
		return resp.StatusCode == 200
	})
	for _, path := range []string{"/one", "/two"} {
		if resp, _ := get(t, n2.url(path)); resp.StatusCode != 429 {
			t.Fatalf("n2 warm, %s: %d, want 429 (the fleet used it up)", path, resp.StatusCode)
		}
	}
	for _, p := range nodes {
		eventually(t, p.admin+" to list 3 members again", func() bool { return p.metric(`tollgate_gossip_members{state="alive"}`) == "3" })
	}

	// 4. The fleet, whole again.
	ls, took = steadyAtLeast(nodes, "/four", rate, phase, limit+limit/4, nil)
	if total(ls).failed != 0 {
		t.Fatalf("failed requests: %+v", ls)
	}
	check("three nodes, n2 back", ls, took, 3)
	for _, p := range nodes {
		for _, reason := range []string{"decode", "key", "absurd"} {
			if got := p.metric(`tollgate_gossip_dropped_total{reason="` + reason + `"}`); got != "0" {
				t.Errorf("%s dropped %s gossip for reason %s", p.addr, got, reason)
			}
		}
	}
}
