package gateway

import "testing"

// A fully qualified Host (trailing dot, with or without a port) takes the
// route of the same name without the dot.
func TestRouteHostTrailingDot(t *testing.T) {
	g := newTestGateway(t, `routes:
  - {host: api.example.com, path: /, upstream: demo}
`)
	s := g.core.Snap.Load()
	for _, host := range []string{"api.example.com", "API.example.com.", "api.example.com.:8080"} {
		if s.Match([]byte(host), []byte("/x")) == nil {
			t.Errorf("Host %q: no route", host)
		}
	}
	if s.Match([]byte("other.example.com"), []byte("/x")) != nil {
		t.Error("another host took the route")
	}
	// Configured with the dot, the same.
	g2 := newTestGateway(t, "routes: [{host: api.example.com., path: /, upstream: demo}]\n")
	for _, host := range []string{"api.example.com", "api.example.com."} {
		if g2.core.Snap.Load().Match([]byte(host), []byte("/x")) == nil {
			t.Errorf("route configured as api.example.com.: Host %q has no route", host)
		}
	}
}

// An IPv6 Host takes the route of its address however the route spells
// it, with or without brackets, as a rule's hosts match it (the gateway
// kept the brackets, the rule engine dropped them).
func TestRouteHostIPv6MatchesAsRulesDo(t *testing.T) {
	for _, spelled := range []string{"::1", "[::1]"} {
		g := newTestGateway(t, "routes: [{host: \""+spelled+"\", path: /, upstream: demo}]\n")
		for _, host := range []string{"[::1]", "[::1]:8080"} {
			if g.core.Snap.Load().Match([]byte(host), []byte("/x")) == nil {
				t.Errorf("route host %q: Host %q has no route", spelled, host)
			}
		}
	}
}
