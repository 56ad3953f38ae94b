package replay

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// The table agrees with a Go map through random inserts and deletes, with
// short (inline) and long keys, across growth.
func TestKeyTableAgreesWithMap(t *testing.T) {
	tab := newKeyTable()
	want := map[string]int32{}
	rng := rand.New(rand.NewPCG(3, 4))
	key := func() string {
		n := rng.IntN(5000)
		if n%10 == 0 {
			return strings.Repeat("long-", 12) + fmt.Sprint(n)
		}
		return fmt.Sprintf("10.%d.%d.%d", n>>16, n>>8&255, n&255)
	}
	next := int32(0)
	for range 50000 {
		k := key()
		b := []byte(k)
		h := tab.hash(b)
		id, ok := tab.get(b, h)
		wid, wok := want[k]
		if ok != wok || id != wid {
			t.Fatalf("get(%q) = %d, %v; map has %d, %v", k, id, ok, wid, wok)
		}
		switch {
		case !ok:
			tab.put(b, h, next)
			want[k] = next
			next++
		case rng.IntN(3) == 0:
			tab.del(b, h)
			delete(want, k)
		}
	}
	for k, id := range want {
		b := []byte(k)
		if got, ok := tab.get(b, tab.hash(b)); !ok || got != id {
			t.Fatalf("final get(%q) = %d, %v; want %d", k, got, ok, id)
		}
	}
	if tab.n+len(tab.long) != len(want) {
		t.Errorf("table holds %d+%d keys, map %d", tab.n, len(tab.long), len(want))
	}
}

// A client address is read without its port, as the rule engine reads a
// host (rules.HostOnly): IPv4 with a port, IPv6 bracketed with or
// without one, and bare; IPv6 aggregated to its prefix.
func TestAppendAddrDropsThePort(t *testing.T) {
	k := &KeySpec{}
	for in, want := range map[string]string{
		"203.0.113.7":            "203.0.113.7",
		"203.0.113.7:5555":       "203.0.113.7",
		"[2001:db8::1]:443":      "2001:db8::/64",
		"[2001:db8::1]":          "2001:db8::/64",
		"2001:db8::1":            "2001:db8::/64",
		"[::ffff:203.0.113.7]:1": "203.0.113.7",
		"":                       "-",
	} {
		if got := string(k.appendAddr(nil, []byte(in))); got != want {
			t.Errorf("appendAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
