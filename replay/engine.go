package replay

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// Rules is a gateway rule set to simulate as the gateway runs it: package
// rules' engine, on the in-memory store, whose clock is the log's time.
// Each request is presented to the engine with its method, host, path,
// query string and client address from the log; headers are absent
// (access logs do not record them), so rules keyed or matched by header
// do not apply, exactly as they would not to a request without it.
type Rules struct {
	// Name labels the rule set in reports, e.g. the configuration file.
	Name string
	// Config is the rule set.
	Config rules.Config
}

// engineRun drives one rules.Engine over the replayed requests.
type engineRun struct {
	eng   *rules.Engine
	store *memory.Store
	now   int64
	// refusedBy counts refusals by the decisive rule's name.
	refusedBy map[string]int64
	errors    int64
}

func newEngineRun(spec *Rules) (*engineRun, error) {
	er := &engineRun{refusedBy: make(map[string]int64)}
	st, err := memory.New(memory.Config{
		Clock:         func() int64 { return er.now },
		SweepInterval: -1, // no background goroutine: idle states are dropped when met or evicted
	})
	if err != nil {
		return nil, err
	}
	cfg := spec.Config
	cfg.Observer = nil
	cfg.Logger = nil
	eng, err := rules.New(cfg, st)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("replay: rules %s: %w", spec.Name, err)
	}
	er.eng, er.store = eng, st
	return er, nil
}

// decide presents one request to the engine at time now.
func (er *engineRun) decide(r *engineRequest, now int64) bool {
	er.now = now
	res, err := er.eng.Decide(context.Background(), r)
	if err != nil {
		er.errors++
	}
	if res.Refused() {
		name := res.Rule()
		er.refusedBy[name]++
		return false
	}
	return true
}

func (er *engineRun) close() { er.store.Close() }

// engineRequest is the rules.Request view of one logged request. Its
// strings are interned by the simulator, so they outlive the line.
type engineRequest struct {
	method, host, path, query string
	addr                      netip.AddrPort
}

func (r *engineRequest) Method() string { return r.method }
func (r *engineRequest) Host() string   { return r.host }
func (r *engineRequest) Path() string   { return r.path }
func (r *engineRequest) Query(name string) (string, bool) {
	return rules.QueryValue(r.query, name)
}
func (r *engineRequest) Header(string) (string, bool) { return "", false }
func (r *engineRequest) RemoteAddr() netip.AddrPort   { return r.addr }

// strings interns the few distinct methods, hosts, paths and queries of a
// log so that queued requests do not each allocate their own copies.
type stringTable struct {
	m   map[string]string
	max int
}

func (t *stringTable) get(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := t.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(t.m) < t.max {
		t.m[s] = s
	}
	return s
}

// parseAddr reads a logged client address, with or without a port.
func parseAddr(b []byte) netip.AddrPort {
	if len(b) == 0 {
		return netip.AddrPort{}
	}
	if ap, err := netip.ParseAddrPort(string(b)); err == nil {
		return ap
	}
	if a, err := netip.ParseAddr(string(b)); err == nil {
		return netip.AddrPortFrom(a, 0)
	}
	return netip.AddrPort{}
}
