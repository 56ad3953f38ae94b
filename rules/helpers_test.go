package rules

import (
	"context"
	"net/netip"
	"net/textproto"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/store/memory"
)

// req is a test Request.
type req struct {
	method, host, path string
	query              map[string]string
	header             map[string]string
	remote             netip.AddrPort
}

func (r *req) Method() string { return r.method }
func (r *req) Host() string   { return r.host }
func (r *req) Path() string   { return r.path }
func (r *req) Query(name string) (string, bool) {
	v, ok := r.query[name]
	return v, ok
}
func (r *req) Header(name string) (string, bool) {
	if name != textproto.CanonicalMIMEHeaderKey(name) {
		panic("engine asked for a non-canonical header name " + name)
	}
	v, ok := r.header[name]
	return v, ok
}
func (r *req) RemoteAddr() netip.AddrPort { return r.remote }

// get returns a GET request for path from the peer ip (port 1234).
func get(path, ip string) *req {
	return &req{method: "GET", host: "api.example.com", path: path, header: map[string]string{},
		remote: netip.AddrPortFrom(netip.MustParseAddr(ip), 1234)}
}

func (r *req) with(name, value string) *req {
	r.header[textproto.CanonicalMIMEHeaderKey(name)] = value
	return r
}

// clock is a settable Unix-ns clock.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) now() int64          { return c.ns.Load() }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }
func (c *clock) wall() time.Time     { return time.Unix(0, c.ns.Load()) }

// newEngine compiles cfg over a fresh memory store on a fake clock.
func newEngine(t testing.TB, cfg Config) (*Engine, *clock) {
	t.Helper()
	c := newClock()
	st, err := memory.New(memory.Config{Clock: c.now, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if cfg.Now == nil {
		cfg.Now = c.wall
	}
	e, err := New(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	return e, c
}

// allowedAllocs is the allocations of one decision of r by e, which
// must allow it, after a first decision built its key.
func allowedAllocs(t testing.TB, e *Engine, r Request) float64 {
	t.Helper()
	decide(t, e, r)
	ctx := context.Background()
	return testing.AllocsPerRun(1000, func() {
		if res, err := e.Decide(ctx, r); err != nil || res.Outcome != Allowed {
			t.Fatal(res.Outcome, err)
		}
	})
}

func decide(t testing.TB, e *Engine, r Request) Result {
	t.Helper()
	res, err := e.Decide(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// headers returns res's header fields as a map (last wins).
func headers(res *Result) map[string]string {
	m := map[string]string{}
	for _, h := range res.AppendHeaders(nil) {
		m[h.Name] = h.Value
	}
	return m
}
