package fastpath

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/gateway/exchange"
)

func TestForEachToken(t *testing.T) {
	var got []string
	ForEachToken([]byte(" close , X-Foo,,X-Bar\t"), func(b []byte) { got = append(got, string(b)) })
	if strings.Join(got, "|") != "close|X-Foo|X-Bar" {
		t.Fatalf("tokens = %q", got)
	}
}

func TestAppendForwarded(t *testing.T) {
	got := exchange.AppendForwarded(nil, [][]byte{[]byte("for=a"), nil}, netip.MustParseAddr("2001:db8::1"), ValHTTPS)
	if string(got) != `for=a, for="[2001:db8::1]";proto=https` {
		t.Fatalf("appendForwarded: %s", got)
	}
}
