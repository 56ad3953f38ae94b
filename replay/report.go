package replay

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// Report is the outcome of a replay. It marshals to JSON for scripts;
// times are RFC 3339, durations nanoseconds (fields ending in _ns).
type Report struct {
	// Input describes what was read.
	Input InputStats `json:"input"`
	// Policies are the outcomes, in the order given (a rule set first).
	Policies []PolicyReport `json:"policies"`
	// Busiest are the keys with the most requests, busiest first.
	Busiest []KeyCount `json:"busiest"`
	// PeakRates is the distribution of per-key peak request rates.
	PeakRates PeakRates `json:"peak_rates"`
	// Series is admitted versus refused over time, per policy.
	Series SeriesData `json:"series"`
	// Timelines are the tracked keys' own series (see Config.Track).
	Timelines []Timeline `json:"timelines,omitempty"`
	// Sections are parts computed by other packages over the same
	// requests (see Section), in order.
	Sections []Section `json:"sections,omitempty"`
}

// InputStats describes what was read.
type InputStats struct {
	// Format is the format read (detected or given).
	Format string `json:"format"`
	// Key is the key specification.
	Key string `json:"key"`
	// Lines read, including blank, header, malformed and filtered ones.
	Lines int64 `json:"lines"`
	// Blank, Header (a CSV header), Malformed and Filtered lines are not
	// simulated.
	Blank     int64 `json:"blank"`
	Header    int64 `json:"header"`
	Malformed int64 `json:"malformed"`
	Filtered  int64 `json:"filtered"`
	// Simulated is the number of requests run through the policies.
	Simulated int64 `json:"simulated"`
	// Keys is the number of distinct keys (with Config.MaxKeys, of key
	// records: a key retired and seen again counts again).
	Keys int `json:"keys"`
	// Retired is how many key records were retired (Config.MaxKeys).
	Retired int64 `json:"retired,omitempty"`
	// First and Last are the earliest and latest request times.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Reorder is the reordering window, holding at most ReorderLines
	// lines.
	Reorder      time.Duration `json:"reorder_ns"`
	ReorderLines int           `json:"reorder_lines"`
	// ReorderFull counts requests simulated before their reordering
	// window had passed, because the window held ReorderLines lines.
	ReorderFull int64 `json:"reorder_full,omitempty"`
	// Late counts requests that arrived after a later time had been
	// simulated: each is simulated at that time instead of its own.
	// LateMax is the most a late request's time was behind the newest
	// time read before it (how far out of order it was); LateShift the
	// most one was moved forward.
	Late      int64         `json:"late"`
	LateMax   time.Duration `json:"late_max_ns"`
	LateShift time.Duration `json:"late_shift_max_ns"`
	// Binary counts malformed lines holding NUL bytes, as binary input
	// (neither text nor gzip) does.
	Binary int64 `json:"binary,omitempty"`
	// FieldsSeen are the fields (JSON names or CSV header columns) of the
	// first line that had no timestamp field, and TimeFields the names a
	// timestamp was looked for under (Config.Fields.Time); both empty when
	// every line had one.
	FieldsSeen []string `json:"fields_seen,omitempty"`
	TimeFields []string `json:"time_fields,omitempty"`
	// Examples are the first malformed lines (Config.Examples of them).
	Examples []Malformed `json:"malformed_examples,omitempty"`
}

// Malformed is one skipped line.
type Malformed struct {
	Line   int64  `json:"line"`   // line number, from 1
	Reason string `json:"reason"` // what was wrong
	Text   string `json:"text"`   // the line, cut at 240 bytes
}

// KeyCount is one key's figures under one policy (or overall, for
// Report.Busiest, where Refused is zero).
type KeyCount struct {
	Key      string `json:"key"`
	Requests int64  `json:"requests"`
	// Refused is how many of Requests the policy refused.
	Refused int64 `json:"refused"`
	// FirstRefused is the time of the first refusal, zero when none.
	FirstRefused time.Time `json:"first_refused,omitzero"`
	// PeakPerSec and PeakPerMin are the key's most requests (cost) in
	// one calendar second and one calendar minute.
	PeakPerSec int64 `json:"peak_per_second"`
	PeakPerMin int64 `json:"peak_per_minute"`
}

// PolicyReport is one policy's outcome.
type PolicyReport struct {
	// Name is the policy's label (or the rule set's name).
	Name string `json:"name"`
	// Policy describes it, e.g. "token_bucket(rate=10/s, burst=20)", or
	// "rules" for a rule set.
	Policy string `json:"policy"`
	// Algorithm is the algorithm's configuration name, or "rules".
	Algorithm string `json:"algorithm"`
	Requests  int64  `json:"requests"`
	Refused   int64  `json:"refused"`
	// RefusedPercent is 100 × Refused / Requests.
	RefusedPercent float64 `json:"refused_percent"`
	// KeysAffected is how many keys had at least one refusal.
	KeysAffected int `json:"keys_affected"`
	// TopRefused are the keys with the most refusals.
	TopRefused []KeyCount `json:"top_refused"`
	// BusiestVerdict is the busiest key's fate under this policy.
	BusiestVerdict KeyCount `json:"busiest_verdict"`
	// Seam is, for a fixed window, the worst seam burst admitted.
	Seam *SeamBurst `json:"seam,omitempty"`
	// Accuracy is, for a sliding window counter, its disagreement with
	// the exact sliding log on the same requests.
	Accuracy *Accuracy `json:"accuracy,omitempty"`
	// Suggestion is the smallest capacity refusing no important key.
	Suggestion *Suggestion `json:"suggestion,omitempty"`
	// RefusedBy counts, for a rule set, refusals by the deciding rule.
	RefusedBy map[string]int64 `json:"refused_by,omitempty"`
	// StoreErrors counts store failures of a rule set (none expected
	// from the in-memory store).
	StoreErrors int64 `json:"store_errors,omitempty"`
	// Counting is, for a rule set with counting rules (Rule.Count),
	// what they charged; nil otherwise.
	Counting *CountingReport `json:"counting,omitempty"`
	// Penalties is, for a rule set with penalties, what they refused;
	// nil otherwise.
	Penalties *PenaltyReport `json:"penalties,omitempty"`
}

// CountingReport is what a rule set's counting rules charged, with the
// answers the log recorded.
type CountingReport struct {
	// Counted is how many answers were charged (once per counting rule
	// that counted one).
	Counted int64 `json:"counted"`
	// NoStatus is how many admitted requests a counting rule matched
	// whose line has no status: not charged.
	NoStatus int64 `json:"no_status"`
}

// PenaltyReport is what a rule set's penalties did.
type PenaltyReport struct {
	// Refusals is how many of the refusals were penalties: the key was
	// under a penalty, or the refusal started one.
	Refusals int64 `json:"refusals"`
	// Started is how many penalties started.
	Started int64 `json:"started"`
	// Keys is how many distinct keys (a rule's key value) were
	// penalised at least once. Past a million keys it counts each
	// further penalty as a key.
	Keys int64 `json:"keys"`
}

// SeamBurst is the largest cost a fixed window admitted for one key in
// any span of one window length, against its limit (at most twice it).
type SeamBurst struct {
	// Key admitted Admitted cost between From and To, less than Window
	// apart, under a policy of Limit per Window.
	Key      string        `json:"key"`
	Admitted int64         `json:"admitted"`
	Limit    int64         `json:"limit"`
	Window   time.Duration `json:"window_ns"`
	From     time.Time     `json:"from"`
	To       time.Time     `json:"to"`
}

// Accuracy compares a sliding window counter with the exact sliding log of
// the same limit and window, each keeping its own state, decision by
// decision. Cloudflare reported 0.003% differing decisions on their
// traffic.
type Accuracy struct {
	// Decisions compared, and how many of them differ.
	Decisions int64 `json:"decisions"`
	Differ    int64 `json:"differ"`
	// FalseAllow: the counter allowed what the exact log refused.
	FalseAllow int64 `json:"false_allow"`
	// FalseRefuse: the counter refused what the exact log allowed.
	FalseRefuse int64 `json:"false_refuse"`
	// DifferPercent is 100 × Differ / Decisions.
	DifferPercent float64 `json:"differ_percent"`
	// ExactPolicy is the sliding log compared with.
	ExactPolicy string `json:"exact_policy"`
	// ExactRefused and CounterRefused are each one's refusals.
	ExactRefused   int64 `json:"exact_refused"`
	CounterRefused int64 `json:"counter_refused"`
}

// Suggestion is the smallest capacity (the limit of a window algorithm,
// the burst of a bucket at its given rate) under which this policy would
// have refused none of the requests of the TopN busiest keys, and of the
// keys up to the Percentile by need.
type Suggestion struct {
	// Param is "limit" or "burst".
	Param string `json:"param"`
	// Current is the policy's current value of Param.
	Current int64 `json:"current"`
	TopN    int   `json:"top_n"`
	// ForTop is the smallest value refusing none of the TopN busiest keys.
	ForTop int64 `json:"for_top"`
	// ForTopPolicy is that policy in --policy syntax.
	ForTopPolicy string  `json:"for_top_policy"`
	Percentile   float64 `json:"percentile"`
	// ForPercentile refuses none of Percentile% of the keys.
	ForPercentile       int64  `json:"for_percentile"`
	ForPercentilePolicy string `json:"for_percentile_policy"`
	// Max refuses no key at all.
	Max int64 `json:"max"`
}

// PeakRates summarises each key's peak requests in one second and in one
// minute (calendar seconds and minutes) across keys.
type PeakRates struct {
	// PerSecond and PerMinute are histograms: Counts[i] keys had a peak
	// in [Bounds[i], Bounds[i+1]).
	PerSecond Histogram `json:"per_second"`
	PerMinute Histogram `json:"per_minute"`
}

// Histogram counts keys by a value in power-of-two buckets, with
// percentiles.
type Histogram struct {
	// Bounds are 1, 2, 4, ... up to the first power of two above Max, or,
	// when Max is 2^62 or more, up to 2^62 and then math.MaxInt64 (the
	// last bucket then also holds Max itself).
	Bounds []int64 `json:"bounds"`
	// Counts has one entry fewer than Bounds.
	Counts []int64 `json:"counts"`
	// P50, P90 and P99 are nearest-rank percentiles over keys; Max the
	// largest value.
	P50 int64 `json:"p50"`
	P90 int64 `json:"p90"`
	P99 int64 `json:"p99"`
	Max int64 `json:"max"`
}

// Timeline is one tracked key's series.
type Timeline struct {
	Key    string     `json:"key"`    // the tracked key
	Series SeriesData `json:"series"` // its requests and outcomes over time
}

func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// buildReport assembles the report of a finished simulation: the input's
// figures, the busiest keys, one PolicyReport per run, the peak-rate
// distributions and the tracked keys' timelines.
func buildReport(s *simulator, cfg *Config, in InputStats) *Report {
	rep := &Report{Input: in, Series: s.series.data()}
	entries, peakSec, peakMin := rankedEntries(s, &rep.Input)
	for k := range min(cfg.Top, len(entries)) {
		rep.Busiest = append(rep.Busiest, keyCount(&entries[k], -1))
	}
	for i, r := range s.runs {
		rep.Policies = append(rep.Policies, policyReport(s, i, r, entries, cfg))
	}
	rep.PeakRates = PeakRates{PerSecond: histogram(peakSec), PerMinute: histogram(peakMin)}
	rep.Timelines = timelines(s, cfg)
	return rep
}

// rankedEntries returns every live key's entry and the retired ones that
// may rank, busiest first, with the distributions of the keys' peak
// rates; it sets in's key count and first and last times.
func rankedEntries(s *simulator, in *InputStats) (entries []keyEntry, peakSec, peakMin counted) {
	ret := s.retired
	peakSec, peakMin = maps.Clone(ret.peakSec), maps.Clone(ret.peakMin)
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	if ret.keys > 0 {
		first, last = ret.first, ret.last
	}
	n := s.live + len(ret.busiest)
	for _, l := range ret.topRefused {
		n += len(l)
	}
	entries = make([]keyEntry, 0, n)
	outs := make([]keyOutcome, s.live*len(s.runs)) // every live entry's, in one allocation
	for k := range s.names {
		if s.names[k] == "" {
			continue
		}
		var e keyEntry
		e, outs = s.entryInto(int32(k), outs)
		e.live = true
		entries = append(entries, e)
		peakSec[e.stat.peakSec]++
		peakMin[e.stat.peakMin]++
		first, last = min(first, e.stat.first), max(last, e.stat.last)
	}
	in.Keys = len(entries) + int(ret.keys)
	in.Retired = ret.keys
	if in.Keys > 0 {
		in.First, in.Last = unixTime(first), unixTime(last)
	}
	// A retired entry may be in several of the lists; a live one is in
	// none (a record retired and reused has a new serial number).
	seen := make(map[int64]bool)
	addRetired := func(list []keyEntry) {
		for _, e := range list {
			if !seen[e.serial] {
				seen[e.serial] = true
				entries = append(entries, e)
			}
		}
	}
	addRetired(ret.busiest)
	for _, l := range ret.topRefused {
		addRetired(l)
	}
	slices.SortFunc(entries, byRequests)
	return entries, peakSec, peakMin
}

// keyCount is e's line in a list of keys; with run >= 0, with its
// refusals in that run.
func keyCount(e *keyEntry, run int) KeyCount {
	kc := KeyCount{Key: e.stat.name, Requests: e.stat.requests, PeakPerSec: e.stat.peakSec, PeakPerMin: e.stat.peakMin}
	if run >= 0 {
		kc.Refused = e.outs[run].refused
		kc.FirstRefused = unixTime(e.outs[run].firstRef)
	}
	return kc
}

// policyReport is run i's report; entries are the ranked keys.
func policyReport(s *simulator, i int, r *run, entries []keyEntry, cfg *Config) PolicyReport {
	pr := PolicyReport{Requests: r.requests, Refused: r.refused}
	if r.engine != nil {
		pr.Name, pr.Policy, pr.Algorithm = r.spec.Name, "rules", "rules"
		pr.RefusedBy = r.engine.refusedBy
		pr.StoreErrors = r.engine.errors
		if er := r.engine; er.counting {
			pr.Counting = &CountingReport{Counted: er.counted, NoStatus: er.noStatus}
		}
		if er := r.engine; er.penalties {
			pr.Penalties = &PenaltyReport{Refusals: er.penRefusals, Started: er.penStarted, Keys: int64(len(er.penKeys)) + er.penKeysOver}
		}
	} else {
		pr.Name = r.spec.label()
		pr.Policy = r.spec.Policy.String()
		pr.Algorithm = r.spec.Policy.Algorithm().String()
	}
	if r.requests > 0 {
		pr.RefusedPercent = 100 * float64(r.refused) / float64(r.requests)
	}
	refused := refusedEntries(entries, i)
	pr.KeysAffected = int(s.retired.affected[i])
	for _, e := range refused {
		if e.live {
			pr.KeysAffected++ // retired ones are counted in retired.affected
		}
	}
	for k := range min(cfg.Top, len(refused)) {
		pr.TopRefused = append(pr.TopRefused, keyCount(&refused[k], i))
	}
	if len(entries) > 0 {
		pr.BusiestVerdict = keyCount(&entries[0], i)
	}
	pr.Seam = seamBurst(r)
	pr.Accuracy = accuracy(r)
	if r.unb != nil {
		pr.Suggestion = suggestion(r, i, entries, needDistribution(s, i), cfg)
	}
	return pr
}

// refusedEntries are the entries with a refusal in run i, most refused
// first.
func refusedEntries(entries []keyEntry, i int) []keyEntry {
	var refused []keyEntry
	for _, e := range entries {
		if e.outs[i].refused > 0 {
			refused = append(refused, e)
		}
	}
	slices.SortFunc(refused, byRefused(i))
	return refused
}

// seamBurst is the largest burst a fixed window let through across a
// window's edge in run r, or nil.
func seamBurst(r *run) *SeamBurst {
	if r.seamIdx < 0 || r.seamMax <= 0 {
		return nil
	}
	q := r.spec.Policy.Quota()
	return &SeamBurst{Key: r.seamKey, Admitted: r.seamMax, Limit: q.Limit,
		Window: q.Window, From: unixTime(r.seamFrom), To: unixTime(r.seamTo)}
}

// accuracy compares run r's sliding window counter with its exact
// sliding log shadow, or is nil when it has none.
func accuracy(r *run) *Accuracy {
	if r.shadow == nil {
		return nil
	}
	a := &Accuracy{Decisions: r.compared, Differ: r.differ, FalseAllow: r.falseAllow,
		FalseRefuse: r.falseRefuse, ExactPolicy: r.shadow.logged.String(),
		CounterRefused: r.refused, ExactRefused: r.refused + r.falseAllow - r.falseRefuse}
	if r.compared > 0 {
		a.DifferPercent = 100 * float64(r.differ) / float64(r.compared)
	}
	return a
}

// needDistribution is the distribution of every key's need in run i (what limit or
// burst would have refused it nothing), retired keys included.
func needDistribution(s *simulator, i int) counted {
	n := maps.Clone(s.retired.need[i])
	if n == nil {
		n = counted{}
	}
	for k := range s.names {
		if s.names[k] != "" {
			n[s.outcome(int32(k), i).need]++
		}
	}
	return n
}

// timelines are the tracked keys' series, in the order of cfg.Track.
func timelines(s *simulator, cfg *Config) []Timeline {
	var tl []Timeline
	for k, tr := range s.tracks {
		tl = append(tl, Timeline{Key: s.names[k], Series: tr.data()})
	}
	slices.SortStableFunc(tl, func(a, b Timeline) int {
		return slices.Index(cfg.Track, a.Key) - slices.Index(cfg.Track, b.Key)
	})
	return tl
}

// counted is a distribution over keys: value -> how many keys have it.
type counted map[int64]int64

// sorted returns the distinct values in order and the total count.
func (c counted) sorted() ([]int64, int64) {
	vals := slices.Sorted(maps.Keys(c))
	n := int64(0)
	for _, v := range vals {
		n += c[v]
	}
	return vals, n
}

// percentile returns the value at or below which p percent of the keys
// lie (nearest rank).
func (c counted) percentile(p float64) int64 {
	vals, n := c.sorted()
	if n == 0 {
		return 0
	}
	rank := min(max(int64(math.Ceil(p/100*float64(n))), 1), n)
	for _, v := range vals {
		if rank -= c[v]; rank <= 0 {
			return v
		}
	}
	return vals[len(vals)-1]
}

func (c counted) max() int64 {
	m := int64(0)
	for v := range c {
		m = max(m, v)
	}
	return m
}

func histogram(c counted) Histogram {
	h := Histogram{P50: c.percentile(50), P90: c.percentile(90), P99: c.percentile(99), Max: c.max()}
	for b := int64(1); ; b *= 2 {
		h.Bounds = append(h.Bounds, b)
		if b > h.Max {
			break
		}
		if b > math.MaxInt64/2 { // doubling would overflow: no power of two is above Max
			h.Bounds = append(h.Bounds, math.MaxInt64)
			break
		}
	}
	h.Counts = make([]int64, len(h.Bounds)-1)
	for x, n := range c {
		for i := len(h.Bounds) - 2; i >= 0; i-- {
			if x >= h.Bounds[i] {
				h.Counts[i] += n
				break
			}
		}
	}
	return h
}

// suggestion reads off the capacities the unbounded run measured: needs
// is their distribution over key records, busiest the records busiest
// first.
func suggestion(r *run, i int, busiest []keyEntry, needs counted, cfg *Config) *Suggestion {
	sg := &Suggestion{TopN: min(cfg.SuggestTop, len(busiest)), Percentile: cfg.SuggestPercentile}
	for _, e := range busiest[:sg.TopN] {
		sg.ForTop = max(sg.ForTop, e.outs[i].need)
	}
	sg.ForPercentile = needs.percentile(cfg.SuggestPercentile)
	sg.Max = needs.max()
	with := func(n int64) string { return "" }
	switch q := r.spec.Policy.(type) {
	case limit.FixedWindow:
		sg.Param, sg.Current = "limit", q.Limit
		with = func(n int64) string { return policyFlag(limit.FixedWindow{Limit: max(n, 1), Window: q.Window}) }
	case limit.SlidingLog:
		sg.Param, sg.Current = "limit", q.Limit
		with = func(n int64) string { return policyFlag(limit.SlidingLog{Limit: max(n, 1), Window: q.Window}) }
	case limit.SlidingWindow:
		sg.Param, sg.Current = "limit", q.Limit
		with = func(n int64) string { return policyFlag(limit.SlidingWindow{Limit: max(n, 1), Window: q.Window}) }
	case limit.TokenBucket:
		sg.Param, sg.Current = "burst", q.Burst
		if q.Burst == 0 {
			sg.Current = q.Rate.Count
		}
		with = func(n int64) string { q.Burst = max(n, 1); return policyFlag(q) }
	case limit.LeakyBucket:
		sg.Param, sg.Current = "burst", q.Burst
		with = func(n int64) string { q.Burst, q.Delay = n, min(q.Delay, n); return policyFlag(q) }
	}
	sg.ForTopPolicy, sg.ForPercentilePolicy = with(sg.ForTop), with(sg.ForPercentile)
	return sg
}

// policyFlag writes p in --policy syntax, which ParsePolicy reads back.
func policyFlag(p limit.Policy) string {
	switch q := p.(type) {
	case limit.FixedWindow:
		return "fixed_window:limit=" + strconv.FormatInt(q.Limit, 10) + ",window=" + periodString(q.Window)
	case limit.SlidingLog:
		return "sliding_log:limit=" + strconv.FormatInt(q.Limit, 10) + ",window=" + periodString(q.Window)
	case limit.SlidingWindow:
		return "sliding_window:limit=" + strconv.FormatInt(q.Limit, 10) + ",window=" + periodString(q.Window)
	case limit.TokenBucket:
		b := q.Burst
		if b == 0 {
			b = q.Rate.Count
		}
		return "token_bucket:rate=" + q.Rate.String() + ",burst=" + strconv.FormatInt(b, 10)
	case limit.LeakyBucket:
		s := "leaky_bucket:rate=" + q.Rate.String() + ",burst=" + strconv.FormatInt(q.Burst, 10) + ",mode=" + q.Mode.String()
		if q.Mode == limit.Shape && q.Delay > 0 {
			s += ",delay=" + strconv.FormatInt(q.Delay, 10)
		}
		return s
	}
	return p.String()
}

// periodString formats a window as ParsePeriod reads it.
func periodString(d time.Duration) string {
	// Rate.String formats its period the way ParsePeriod reads; reuse it.
	s := limit.Rate{Count: 1, Period: d}.String()
	s = s[strings.IndexByte(s, '/')+1:]
	if s != "" && (s[0] < '0' || s[0] > '9') {
		s = "1" + s // "m" reads back, but "1m" reads as a window
	}
	return s
}
