package config

import (
	"testing"
	"time"
)

// Every listener has a write bound by default (nginx's send_timeout of
// 60s, between writes), and one client's share of an upstream pool is an
// eighth of it, at least one connection.
func TestSlowClientDefaults(t *testing.T) {
	for _, tc := range []struct {
		src       string
		send      time.Duration
		perClient int
	}{
		{"{}", 60 * time.Second, 128},
		{"upstream: {max_conns: 16}", 60 * time.Second, 2},
		{"upstream: {max_conns: 4}", 60 * time.Second, 1},
		{"listen: {send_timeout: 5s}\nupstream: {max_conns_per_client: 3}", 5 * time.Second, 3},
	} {
		c, err := Parse("f.yaml", []byte(tc.src))
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if c.Listen.SendTimeout != tc.send || c.Upstream.MaxConnsPerClient != tc.perClient {
			t.Errorf("%s: send_timeout %v, max_conns_per_client %d; want %v, %d", tc.src,
				c.Listen.SendTimeout, c.Upstream.MaxConnsPerClient, tc.send, tc.perClient)
		}
	}
	_, err := Parse("f.yaml", []byte("listen:\n  send_timeout: 1us\nupstream:\n  max_conns_per_client: -1\n"))
	checkProblems(t, err, []want{
		{2, "listen.send_timeout 1µs is below the least value of 1ms"},
		{4, "upstream.max_conns_per_client -1 must not be negative"},
	})
}
