package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// forgedDelta returns a gossip message (a round's delta, plaintext: what
// a node without a secret key accepts) giving node one fixed window
// counter of key: window win (Unix seconds, 1 s windows) and cur admitted
// in it, under a limit of lim; of wire version 1, or, with a stamp (Unix
// ns, not 0), of version 2 stamped so. It is wrapped as memberlist's user
// message (type 8), ready to send to a node's gossip port over UDP.
func forgedDelta(node, key string, lim, win, cur, stamp int64) []byte {
	var b []byte
	version := byte(1)
	if stamp != 0 {
		version = 2
		b = binary.AppendUvarint(b, uint64(stamp))
	}
	b = binary.AppendUvarint(b, 1) // one node name
	b = binary.AppendUvarint(b, uint64(len(node)))
	b = append(b, node...)
	b = binary.AppendUvarint(b, 1) // one entry
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = append(b, byte(limit.AlgFixedWindow))
	b = binary.AppendUvarint(b, uint64(time.Second))
	b = binary.AppendUvarint(b, uint64(lim))
	b = binary.AppendUvarint(b, 1) // one counter: node 0's
	b = binary.AppendUvarint(b, 0)
	b = binary.AppendUvarint(b, uint64(win))
	b = binary.AppendUvarint(b, uint64(cur))
	b = append(b, 0, 0, 0) // prev, registers
	msg := []byte{8, version, 1, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(msg[3:7], uint32(len(b)))
	return append(msg, b...)
}

// gossipKey is the store key of rule name's one fixed window policy of 1 s
// keyed by path (the rule engine's: rule, policy and state kind, then the
// key's value, separated by 0x1f).
func gossipKey(rule, path string) string {
	return rule + "\x1f" + rule + "\x1f" + "fixed_window=1s\x1f" + path
}

// TestE2EGossipForgedOwnWindow: on a plaintext fleet of three tollgate
// serve processes, packets naming the receiving node itself with a window
// 30 s ahead (inside the allowed skew, so they decode) no longer lift the
// key's limit on it: 100 requests a second to that node admit at most the
// limit in each 1 s window, and the forged counters are counted as
// dropped (reason "future"). Merged, they kept the later, empty window in
// the node's own slot and its own admissions landed where no view counted
// them: it admitted every request (800 of 800 in the report; 283 of 283
// here). Stamped 30 s ahead as well, they move the node's time on once,
// by the most a stamp can (MaxSkew): one window ends early, and the limit
// holds all the same.
func TestE2EGossipForgedOwnWindow(t *testing.T) {
	tollgateBinary(t)
	const lim = 20
	ports := []int{gossipPort(t), gossipPort(t), gossipPort(t)}
	cfgOf := func(i int) string {
		return baseCfg + "routes: [{path: /, upstream: demo}]\n" + gossipNode(i, ports, ", interval: 100ms") + fleetRule(lim, "1s")
	}
	nodes := []*proc{startServe(t, cfgOf(0)), startServe(t, cfgOf(1)), startServe(t, cfgOf(2))}
	for _, p := range nodes {
		eventually(t, p.admin+" to list 3 members", func() bool { return p.metric(`tollgate_gossip_members{state="alive"}`) == "3" })
	}
	target := nodes[0]
	conn, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", ports[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(b []byte) {
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}

	// The forger's key is the one the gateway uses: a counter of a node
	// "x" that used the limit up makes n0 refuse.
	eventually(t, "a forged full count of another node to be honoured", func() bool {
		send(forgedDelta("x", gossipKey("fleet", "/probe"), lim, time.Now().Unix(), lim, 0))
		time.Sleep(10 * time.Millisecond) // the packet is in flight: no readiness to wait on
		resp, _ := get(t, target.url("/probe"))
		return resp.StatusCode == 429
	})

	// 100 requests a second to n0 for 3 s, a packet naming n0 30 s ahead
	// every 100 ms; then the same stamped 30 s ahead (wire version 2),
	// which moves n0's time on once, by 30 s (the most any stamp can):
	// one window ends early, one limit more.
	for _, phase := range []struct {
		path    string
		stamped bool
		extra   int
	}{{"/p", false, 0}, {"/q", true, 1}} {
		key := gossipKey("fleet", phase.path)
		last := time.Duration(-1)
		ls, took := steady([]*proc{target}, phase.path, 100, 3*time.Second, func(el time.Duration) {
			if el/(100*time.Millisecond) != last {
				last = el / (100 * time.Millisecond)
				now, stamp := time.Now(), int64(0)
				if phase.stamped {
					stamp = now.Add(30 * time.Second).UnixNano()
				}
				send(forgedDelta("n0", key, lim, now.Unix()+30, 0, stamp))
				send(forgedDelta("n0", key, lim, now.Unix()+60, 0, stamp))
			}
		})
		l := ls[0]
		if l.failed != 0 || l.other != 0 || l.cold != 0 {
			t.Fatalf("n0's answers: %+v", l)
		}
		// The run touches at most ⌈took⌉ + 1 windows of 1 s; one node
		// alone sees all its admissions at once (no gossip lag).
		windows := int(took/time.Second) + 2 + phase.extra
		t.Logf("forged own window 30 s ahead every 100 ms (stamped: %v): n0 admitted %d of %d in %v, limit %d/s (%.1f/s admitted)",
			phase.stamped, l.admitted, l.sent, took.Round(time.Millisecond), lim, float64(l.admitted)/took.Seconds())
		if l.admitted > lim*windows {
			t.Errorf("n0 admitted %d of %d in %v under a limit of %d/s (at most %d in %d windows)", l.admitted, l.sent, took, lim, lim*windows, windows)
		}
	}
	if got := target.metric(`tollgate_gossip_dropped_total{reason="future"}`); got == "0" || got == "" {
		t.Errorf("n0 counted %q forged own windows as dropped (future)", got)
	}
}
