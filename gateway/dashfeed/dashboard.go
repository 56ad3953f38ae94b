package dashfeed

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway/dashboard"
	"github.com/tollgate-dev/tollgate/gateway/exchange"
	"github.com/tollgate-dev/tollgate/gateway/observe"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/redis"
	"github.com/tollgate-dev/tollgate/topk"
)

// Feed is what feeds the live dashboard: the heavy hitters, the
// history of decision rates, the open pages (hub), and the refusal log
// that shares the observer. It samples the decision counters every
// admin.dashboard.period, and builds a frame only while a page is open.
type Feed struct {
	g       *Sources
	Hub     *dashboard.Hub
	Hitters observe.HitterSet
	// Penalties are the penalties in force, kept across reloads.
	Penalties *observe.Penalties
	refuse    *observe.RefusalLog // nil when off

	Mu        sync.Mutex
	Providers []dashboard.StatusProvider
	history   []dashboard.Sample // a ring, oldest at head once full
	head      int
	prev      map[string]rateCounts // cumulative counts at the last sample
	prevAt    time.Time
	words     string // the configuration in words, as last sent
	shown     *config.Config
	sampled   *exchange.Snapshot // the snapshot of the last sample

	probing atomic.Bool            // a Redis round trip is being timed
	lastRTT atomic.Pointer[string] // the last one timed

	stop, done chan struct{}
	started    bool
}

// rateCounts are a series' cumulative decisions by outcome.
type rateCounts [4]float64

// New returns the feed of the gateway g, with the refusal log cfg
// names opened; Start begins sampling.
func New(g *Sources, cfg *config.Config) (*Feed, error) {
	d := &Feed{g: g, prev: map[string]rateCounts{}, stop: make(chan struct{}), done: make(chan struct{}),
		Penalties: observe.NewPenalties(observe.MaxPenaltiesShown)}
	d.Hub = dashboard.NewHub(d.hello)
	var err error
	if d.refuse, err = observe.OpenRefusalLog(cfg); err != nil {
		return nil, err
	}
	return d, nil
}

// Enabled reports whether the running configuration has the dashboard.
func (d *Feed) Enabled() bool { return d.g.Snap.Load().Cfg.Admin.Dashboard.On() }

// Observer returns the rules.Observer for a snapshot of cfg: the metrics'
// own when neither the dashboard nor the refusal log is on, so that
// neither costs anything then; else one that also feeds them. It also
// returns the rules' heavy hitters, by position (nil when off).
func (d *Feed) Observer(m *observe.Observer, c *config.Config, rc *rules.Config) (rules.Observer, []*observe.RuleTops) {
	var tops []*observe.RuleTops
	if c.Admin.Dashboard.On() && c.Admin.Addr != "off" {
		tops = d.Hitters.ForRules(rc, c.Admin.Dashboard.Counters)
	}
	if tops == nil && d.refuse == nil {
		return m, nil
	}
	w := &WatchedObserver{m: m, tops: tops, log: d.refuse}
	if tops != nil {
		w.pens = d.Penalties
	}
	if d.refuse != nil {
		w.counts = make([]*observe.RefusalCount, len(rc.Rules))
		for i, r := range rc.Rules {
			w.counts[i] = d.refuse.Counter(r.Name)
		}
	}
	return w, tops
}

// WatchedObserver passes each event to the metrics, the rule's heavy
// hitters and, for a refusal, the refusal log.
type WatchedObserver struct {
	m      *observe.Observer
	tops   []*observe.RuleTops     // by rule position; nil when the dashboard is off
	log    *observe.RefusalLog     // nil when off
	counts []*observe.RefusalCount // by rule position, with log
	pens   *observe.Penalties      // nil when the dashboard is off
}

// Observe implements rules.Observer.
func (w *WatchedObserver) Observe(ev rules.Event) {
	w.m.Observe(ev)
	i := uint(ev.RuleIndex)
	if i < uint(len(w.tops)) && ev.Outcome != rules.Counted {
		// A counted answer's request was seen at its decision: its
		// charge is not one more request of the key.
		w.tops[i].Observe(&ev)
	}
	if w.log != nil && ev.Outcome == rules.Refused && i < uint(len(w.counts)) {
		w.log.Refused(w.counts[i], &ev)
	}
	if w.pens != nil && ev.Penalty > 0 {
		w.pens.Note(observe.PenaltyID{Rule: ev.Rule, Policy: ev.Policy, Key: ev.Key}, ev.Penalty, time.Now())
	}
}

// Start runs the sampler.
func (d *Feed) Start() {
	d.started = true
	go d.run()
}

// Close stops the sampler, the open pages and the refusal log.
func (d *Feed) Close() {
	close(d.stop)
	if d.started {
		<-d.done
	}
	d.Hub.Close()
	if d.refuse != nil {
		d.refuse.Close()
	}
}

func (d *Feed) run() {
	defer close(d.done)
	period := d.g.Snap.Load().Cfg.Admin.Dashboard.Period
	t := time.NewTicker(period)
	defer t.Stop()
	d.tick(time.Now())
	for {
		select {
		case now := <-t.C:
			if p := d.g.Snap.Load().Cfg.Admin.Dashboard.Period; p != period {
				period = p
				t.Reset(p)
				d.Mu.Lock()
				d.history, d.head = nil, 0
				d.Mu.Unlock()
			}
			d.tick(now)
		case <-d.stop:
			return
		}
	}
}

// tick takes a sample of the decision rates and, with a page open, sends
// a frame.
func (d *Feed) tick(now time.Time) {
	s := d.g.Snap.Load()
	if !s.Cfg.Admin.Dashboard.On() {
		return
	}
	sample := d.Sample(s, now)
	if d.Hub.Viewers() == 0 {
		return
	}
	b, err := d.Frame(s, sample)
	if err != nil {
		d.g.Log.Error("dashboard frame", "err", err)
		return
	}
	d.Hub.Publish(dashboard.EventFrame, b)
}

// Frame is the EventFrame data for s with sample.
func (d *Feed) Frame(s *exchange.Snapshot, sample dashboard.Sample) ([]byte, error) {
	f := dashboard.Frame{Sample: sample, Rules: d.tops(s), Penalties: d.penalties(s, time.Now()), Status: d.status()}
	d.Mu.Lock()
	if d.shown != s.Cfg {
		d.shown, d.words = s.Cfg, describe(s.Cfg)
		f.Words = d.words
	}
	d.Mu.Unlock()
	return json.Marshal(&f)
}

// Sample reads the decision counters of s's rules and records their
// rates since the last sample in the history.
func (d *Feed) Sample(s *exchange.Snapshot, now time.Time) dashboard.Sample {
	smp := dashboard.Sample{Time: now.UnixMilli()}
	d.Mu.Lock()
	defer d.Mu.Unlock()
	secs := now.Sub(d.prevAt).Seconds()
	next := make(map[string]rateCounts, len(d.prev))
	if s.Engine != nil && s.Obs != nil {
		for i, r := range s.Cfg.Rules {
			if i >= len(s.Obs.Rules) {
				break
			}
			for j, p := range s.Engine.PolicyNames(i) {
				if j >= len(s.Obs.Rules[i].ByPolicy) {
					break
				}
				c := &s.Obs.Rules[i].ByPolicy[j]
				cur := rateCounts{
					counterValue(c[rules.Allowed]) + counterValue(c[rules.ShadowAllowed]),
					counterValue(c[rules.Delayed]),
					counterValue(c[rules.Refused]),
					counterValue(c[rules.ShadowRefused]),
				}
				id := r.Name + observe.KeyPartSep + p
				next[id] = cur
				if cur == (rateCounts{}) {
					continue // nothing matched yet: no chart
				}
				old, ok := d.prev[id]
				rate := dashboard.Rate{Rule: r.Name, Policy: p, Shadow: r.Shadow}
				if ok && secs > 0 {
					rate.Allowed = max(cur[0]-old[0], 0) / secs
					rate.Delayed = max(cur[1]-old[1], 0) / secs
					rate.Refused = max(cur[2]-old[2], 0) / secs
					rate.ShadowRefused = max(cur[3]-old[3], 0) / secs
				}
				smp.Rates = append(smp.Rates, rate)
			}
		}
	}
	d.prev, d.prevAt = next, now
	if d.sampled != s {
		d.sampled = s
		d.Hitters.KeepOnly(s.Tops) // the rules of the old snapshot are gone
	}
	capacity := d.capacity(s.Cfg)
	if len(d.history) < capacity {
		d.history = append(d.history, smp)
	} else {
		d.history[d.head] = smp
		d.head = (d.head + 1) % capacity
	}
	return smp
}

// capacity is how many samples the history holds.
func (d *Feed) capacity(c *config.Config) int {
	return max(int(c.Admin.Dashboard.History/c.Admin.Dashboard.Period), 1)
}

// counterValue reads a Prometheus counter; 0 for nil.
func counterValue(c prometheus.Counter) float64 {
	if c == nil {
		return 0
	}
	var m dto.Metric
	if c.Write(&m) != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// hello is the first event of every page: the history and the rules in
// words.
func (d *Feed) hello() []byte {
	s := d.g.Snap.Load()
	dc := s.Cfg.Admin.Dashboard
	h := dashboard.Hello{Capacity: d.capacity(s.Cfg), Period: dc.Period.Seconds(), Keys: dc.Keys, Words: describe(s.Cfg)}
	d.Mu.Lock()
	h.History = make([]dashboard.Sample, 0, len(d.history))
	h.History = append(h.History, d.history[d.head:]...)
	h.History = append(h.History, d.history[:d.head]...)
	d.Mu.Unlock()
	b, err := json.Marshal(&h)
	if err != nil {
		return []byte("{}")
	}
	return b
}

// describe is the configuration in words, as tollgate check prints it.
func describe(c *config.Config) string {
	var b bytes.Buffer
	c.Describe(&b)
	return b.String()
}

// tops lists each rule's heaviest keys, shown as configured.
func (d *Feed) tops(s *exchange.Snapshot) []dashboard.RuleTops {
	dc := s.Cfg.Admin.Dashboard
	out := make([]dashboard.RuleTops, 0, len(s.Tops))
	var buf []topk.Entry
	list := func(e []topk.Entry) []dashboard.Hitter {
		hs := make([]dashboard.Hitter, len(e))
		for i, x := range e {
			hs[i] = dashboard.Hitter{Key: observe.ShowKey(dc.Keys, x.Key), Count: x.Count, Error: x.Error, Remaining: x.Tag}
		}
		return hs
	}
	for _, t := range s.Tops {
		rt := dashboard.RuleTops{Rule: t.Rule, Shadow: t.Shadow, Requests: t.Volume.Total(), Refusals: t.Refusals.Total()}
		buf = t.Volume.Top(buf[:0], dc.Top)
		rt.Volume = list(buf)
		buf = t.Refusals.Top(buf[:0], dc.Top)
		rt.Refused = list(buf)
		out = append(out, rt)
	}
	return out
}

// penalties lists the penalties in force at now, the longest left
// first, their keys shown as configured (as the heavy hitters').
func (d *Feed) penalties(s *exchange.Snapshot, now time.Time) []dashboard.Penalty {
	in := d.Penalties.InForce(nil, now)
	out := make([]dashboard.Penalty, len(in))
	for i, p := range in {
		out[i] = dashboard.Penalty{Rule: p.Rule, Policy: p.Policy, Key: observe.ShowKey(s.Cfg.Admin.Dashboard.Keys, p.Key),
			Left: p.Left.Round(time.Second).Seconds()}
	}
	return out
}

// status is the store's state, then that of each added provider.
func (d *Feed) status() []dashboard.Status {
	var out []dashboard.Status
	if ms := d.g.Stores.Memory(); ms != nil {
		st := ms.Stats()
		cap := d.g.Snap.Load().Cfg.Store.Memory.MaxKeys
		out = append(out, dashboard.Status{Name: "memory store", Kind: "store", Fields: []dashboard.Field{
			{Name: "keys", Value: strconv.Itoa(st.Keys) + " of " + strconv.Itoa(cap)},
			{Name: "evicted before idle", Value: strconv.FormatUint(st.Evictions, 10), Alert: st.Evictions > 0},
			{Name: "refused, store full", Value: strconv.FormatUint(st.Full, 10), Alert: st.Full > 0},
			{Name: "expired (idle)", Value: strconv.FormatUint(st.Expired, 10)},
		}})
	}
	if rs := d.g.Stores.Redis(); rs != nil {
		st := rs.Stats()
		state := "up"
		switch {
		case !st.Connected:
			state = "not connected"
		case st.BreakerOpen:
			state = "breaker open"
		}
		rtt := "-"
		if st.Up() {
			rtt = d.redisRoundTrip(rs)
		}

		out = append(out, dashboard.Status{Name: "redis", Kind: "store", Fields: []dashboard.Field{
			{Name: "state", Value: state, Alert: !st.Up()},
			{Name: "round trip", Value: rtt},
			{Name: "decisions", Value: strconv.FormatUint(st.Decisions, 10)},
			{Name: "over-limit cache hits", Value: strconv.FormatUint(st.CacheHits, 10)},
			{Name: "failures", Value: strconv.FormatUint(st.Failures, 10), Alert: st.Failures > 0},
			{Name: "timeouts", Value: strconv.FormatUint(st.Timeouts, 10)},
			{Name: "breaker trips", Value: strconv.FormatUint(st.BreakerTrips, 10)},
			{Name: "answered by failure mode", Value: strconv.FormatUint(st.FailOpen+st.FailClosed+st.FailLocal, 10)},
		}})
	}
	if gs := d.g.Stores.Gossip(); gs != nil {
		st := gs.Stats()
		state := "warm"
		if !st.Warm {
			state = "cold: no state exchange with the fleet yet"
		}
		cold := d.g.Stores.ColdDecisions()
		dropped := st.Dropped.Total()
		out = append(out, dashboard.Status{Name: "gossip node " + gs.Name() + " on " + gs.Addr(), Kind: "store", Fields: []dashboard.Field{
			{Name: "state", Value: state, Alert: !st.Warm},
			{Name: "members alive", Value: strconv.Itoa(st.Alive)},
			{Name: "suspect", Value: strconv.Itoa(st.Suspect), Alert: st.Suspect > 0},
			{Name: "dead (last hour)", Value: strconv.Itoa(st.Dead), Alert: st.Dead > 0},
			{Name: "keys", Value: strconv.Itoa(st.Keys)},
			{Name: "merge lag", Value: st.MergeLag.Round(time.Millisecond).String()},
			{Name: "bytes sent / received", Value: strconv.FormatUint(st.BytesSent, 10) + " / " + strconv.FormatUint(st.BytesReceived, 10)},
			{Name: "dropped (tollgate_gossip_dropped_total)", Value: strconv.FormatUint(dropped, 10), Alert: dropped > 0},
			{Name: "answered cold by failure mode", Value: strconv.FormatUint(cold.Open+cold.Closed+cold.Local, 10)},
		}})
	}
	for _, e := range d.g.Stores.EventualSyncs() {
		lag := "never synced"
		if e.LastOK != 0 {
			lag = e.Lag.Round(time.Millisecond).String()
		}
		out = append(out, dashboard.Status{Name: "eventual sync every " + e.Interval.String(), Kind: "store", Fields: []dashboard.Field{
			{Name: "since the last good sync", Value: lag, Alert: e.LastOK == 0 || e.Lag > 3*e.Interval},
			{Name: "last round trip", Value: e.RoundTrip.Round(time.Microsecond).String()},
			{Name: "keys pushed", Value: strconv.Itoa(e.Keys)},
			{Name: "syncs", Value: strconv.FormatUint(e.Syncs, 10)},
			{Name: "failed", Value: strconv.FormatUint(e.Failures, 10), Alert: e.Failures > 0},
		}})
	}
	out = append(out, d.g.Adapt.Statuses()...)
	out = append(out, d.g.Concs.Statuses()...)
	d.Mu.Lock()
	ps := append([]dashboard.StatusProvider(nil), d.Providers...)
	d.Mu.Unlock()
	for _, p := range ps {
		out = append(out, p.Status())
	}
	return out
}

// ObserverOf is the observer s's engine reports to, for tests.
func (d *Feed) ObserverOf(s *exchange.Snapshot) rules.Observer { return s.Observer }

// probeKey is the key the dashboard reads to time a Redis round trip (a
// zero charge: it changes nothing).
const probeKey = "dashboard:probe"

var probePolicy = limit.FixedWindow{Limit: 1, Window: time.Second}

// redisRoundTrip returns the last timed Redis round trip and starts the
// next timing in the background (one at a time), so that a slow Redis
// never holds up a frame: one script call per frame while a page is open,
// never on the request path.
func (d *Feed) redisRoundTrip(rs *redis.Store) string {
	if d.probing.CompareAndSwap(false, true) {
		timeout := time.Second
		if r := d.g.Snap.Load().Cfg.Store.Redis; r != nil && r.Timeout > 0 {
			timeout = r.Timeout
		}
		go func() {
			defer d.probing.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			t0 := time.Now()
			err := rs.Sync(ctx, []redis.Charge{{Key: probeKey, Policy: probePolicy}})
			v := time.Since(t0).Round(time.Microsecond).String()
			if err != nil {
				v = "failed after " + v
			}
			d.lastRTT.Store(&v)
		}()
	}
	if v := d.lastRTT.Load(); v != nil {
		return *v
	}
	return "measuring"
}
