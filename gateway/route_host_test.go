package gateway

import "testing"

// A fully qualified Host (trailing dot, with or without a port) takes the
// route of the same name without the dot.
func TestRouteHostTrailingDot(t *testing.T) {
	g := newTestGateway(t, `routes:
  - {host: api.example.com, path: /, upstream: demo}
`)
	s := g.snap.Load()
	for _, host := range []string{"api.example.com", "API.example.com.", "api.example.com.:8080"} {
		if s.match([]byte(host), []byte("/x")) == nil {
			t.Errorf("Host %q: no route", host)
		}
	}
	if s.match([]byte("other.example.com"), []byte("/x")) != nil {
		t.Error("another host took the route")
	}
}
