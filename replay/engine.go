package replay

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// Rules is a gateway rule set to simulate as the gateway runs it: package
// rules' engine, on the in-memory store, whose clock is the log's time.
// Each request is presented to the engine with its method, host, path,
// query string and client address from the log; headers are absent
// (access logs do not record them), so rules keyed or matched by header
// do not apply, exactly as they would not to a request without it.
//
// A counting rule (rules.Rule.Count) is charged with the answer the log
// recorded (its status field): a request the replay admits is charged as
// the gateway would charge it after that answer. A request the replay
// refuses got no answer in the simulation and is not charged, whatever
// the log says it got then. A line with no status is not charged
// (Counting.NoStatus counts them), and neither is one of status 499,
// counted there too (nginx's and the gateway's "client closed request":
// the gateway charges no counting rule for a delayed request whose
// client left, and nginx's 499 does not say what the upstream answered),
// nor is a rule that counts a response header, which logs do not record.
// Penalties run as in the gateway, on the log's clock; the report says
// how many refusals were penalties and how many keys were penalised.
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
	// counting and penalties: the rule set has counting rules, penalties.
	counting, penalties bool
	counted, noStatus   int64 // answers charged; admitted, counted, no status
	penRefusals         int64 // refusals while a penalty is in force (or starting)
	penStarted          int64
	penKeys             map[string]struct{} // rule, 0x1f, key: each penalised key
	penKeysOver         int64               // penalised keys past maxPenKeys
}

// maxPenKeys bounds the distinct penalised keys remembered; past it the
// count of keys penalised is a lower bound plus the penalties beyond.
const maxPenKeys = 1 << 20

// Observe counts the charges and the penalties started.
func (er *engineRun) Observe(ev rules.Event) {
	if ev.Outcome == rules.Counted && ev.Decision.Allowed {
		er.counted++
	}
	if ev.PenaltyStarted {
		er.penStarted++
		k := ev.Rule + "\x1f" + ev.Key
		if _, ok := er.penKeys[k]; !ok {
			if len(er.penKeys) < maxPenKeys {
				er.penKeys[k] = struct{}{}
			} else {
				er.penKeysOver++
			}
		}
	}
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
	// The engine's clock is the log's too: the reset instants and what
	// the engine remembers of refusals (penalties in force) follow it.
	cfg.Now = func() time.Time { return time.Unix(0, er.now) }
	for _, r := range cfg.Rules {
		er.counting = er.counting || r.Count != nil
		er.penalties = er.penalties || r.Penalty != 0
		for _, p := range r.Policies {
			er.penalties = er.penalties || p.Penalty != 0
		}
		if r.Tiers != nil {
			for _, list := range r.Tiers.Plans {
				for _, p := range list {
					er.penalties = er.penalties || p.Penalty != 0
				}
			}
		}
	}
	if er.counting || er.penalties {
		cfg.Observer = er
		er.penKeys = make(map[string]struct{})
	}
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
		if res.Penalty() > 0 {
			er.penRefusals++
		}
		return false
	}
	if res.Counts() {
		if r.status == 0 {
			er.noStatus++
		} else if err := res.Charge(context.Background(), r.status, nil); err != nil {
			er.errors++
		}
	}
	// The request has ended: what Charge did not end (a line without a
	// status) gives its counting reservations back.
	res.Release()
	return true
}

func (er *engineRun) close() { er.store.Close() }

// engineRequest is the rules.Request view of one logged request. Its
// strings are interned by the simulator, so they outlive the line.
type engineRequest struct {
	method, host, path, query string
	addr                      netip.AddrPort
	status                    int // the logged answer's; 0 when none
}

// statusClientClosed is nginx's 499, which the gateway's access log
// writes too (observe.StatusClientClosed).
const statusClientClosed = 499

// parseStatus reads a logged status code, 100-599, or 0 for none: a
// 499 (client closed request) is none.
func parseStatus(b []byte) int {
	if len(b) != 3 {
		return 0
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	if n < 100 || n > 599 || n == statusClientClosed {
		return 0
	}
	return n
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
