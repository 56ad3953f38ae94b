package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tollgate-dev/tollgate/accesslog"
)

// DefaultReorder is the reordering window when Config.Reorder is zero:
// web servers write a request's line when it ends, so lines commonly run
// up to a minute out of order.
const DefaultReorder = time.Minute

// DefaultReorderLines is the most lines the reordering window holds when
// Config.ReorderLines is zero: some 10 MB, a minute of a server answering
// over 4,000 requests a second.
const DefaultReorderLines = 1 << 18

// Config says what to read and what to simulate. The zero value of each
// field is its documented default; Policies must not be empty.
type Config struct {
	// Format of the input; accesslog.FormatAuto (the zero value)
	// detects it.
	Format accesslog.Format
	// Fields names the JSON fields or CSV columns; zero is
	// accesslog.DefaultFields.
	Fields accesslog.Fields
	// Key builds each request's key; the zero KeySpec means "ip".
	Key KeySpec
	// Filter selects the requests simulated; zero selects all.
	Filter Filter
	// Policies are simulated side by side, each on its own.
	Policies []Policy
	// Rules, if set, is also simulated, as the gateway would run it; it
	// comes first in the report. Policies may then be empty.
	Rules *Rules
	// Reorder is the reordering window; zero means DefaultReorder,
	// negative disables reordering.
	Reorder time.Duration
	// ReorderLines bounds the lines the reordering window holds, and so
	// its memory, whatever the timestamps say (a log whose lines all
	// carry one timestamp would otherwise be held whole). When it is
	// full the earliest line is simulated before its window has passed
	// (InputStats.ReorderFull counts them). Zero means
	// DefaultReorderLines.
	ReorderLines int
	// Suggest computes, per policy, the smallest limit (or burst) that
	// refuses none of the SuggestTop busiest keys and none of the keys up
	// to SuggestPercentile.
	Suggest bool
	// SuggestTop is how many of the busiest keys must never be refused;
	// zero means 10.
	SuggestTop int
	// SuggestPercentile is the share of keys (by need, in percent) that
	// must never be refused; zero means 99.
	SuggestPercentile float64
	// Top is how many keys the report lists per policy; zero means 10.
	Top int
	// Track lists keys whose own timelines are recorded (the HTML report's
	// busiest keys: found by a first run, recorded by a second).
	Track []string
	// Examples is how many malformed lines the report shows; zero means 5.
	Examples int
	// MaxKeys bounds the keys whose records are held. Zero means no bound:
	// every distinct key keeps a record of a few hundred bytes to the end,
	// and every per-key figure of the report is exact. With a bound,
	// memory follows the live keys: once more than MaxKeys are held, keys
	// whose every algorithm state is idle (so that dropping them changes
	// no decision, see limit.State) and that have been quiet longest are
	// retired, their figures folded into the report's totals,
	// distributions and top lists. The simulation stays exact; a retired
	// key that returns starts a new record, so per-key figures then
	// describe stretches of activity rather than whole keys
	// (InputStats.Retired says how many stretches were folded).
	MaxKeys int
	// Progress, if set, is called now and then with the number of input
	// bytes read so far (compressed bytes for gzip input).
	Progress func(read int64)
	// Tap, if set, sees every simulated request in the order simulated
	// (time order, after reordering): its instant (Unix ns), key and
	// cost. Package fleetsim replays the same requests through a
	// simulated fleet by it.
	Tap func(t int64, key string, cost int64)
}

// ErrNoPolicies reports a Config without policies.
var ErrNoPolicies = errors.New("replay: no policies to simulate")

func (c *Config) defaults() error {
	if len(c.Policies) == 0 && c.Rules == nil {
		return ErrNoPolicies
	}
	for _, p := range c.Policies {
		if p.Policy == nil {
			return fmt.Errorf("replay: policy %q has no algorithm", p.Name)
		}
		if err := p.Policy.Validate(); err != nil {
			return fmt.Errorf("replay: policy %s: %w", p.label(), err)
		}
	}
	if err := c.Filter.Validate(); err != nil {
		return err
	}
	if c.Key.parts == nil {
		c.Key, _ = ParseKeySpec("ip")
	}
	if c.Reorder == 0 {
		c.Reorder = DefaultReorder
	}
	if c.ReorderLines <= 0 {
		c.ReorderLines = DefaultReorderLines
	}
	if c.SuggestTop <= 0 {
		c.SuggestTop = 10
	}
	if c.SuggestPercentile <= 0 || c.SuggestPercentile > 100 {
		c.SuggestPercentile = 99
	}
	if c.Top <= 0 {
		c.Top = 10
	}
	if c.Examples <= 0 {
		c.Examples = 5
	}
	return nil
}

// Run reads the log from r to its end (or until ctx is done), simulates
// every policy and returns the report. Malformed lines are counted and
// skipped; only read errors, a cancelled ctx or an invalid Config stop a
// run.
func Run(ctx context.Context, r io.Reader, cfg Config) (*Report, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	src, err := newLineSource(r)
	if err != nil {
		return nil, err
	}
	format := cfg.Format
	if format == accesslog.FormatAuto {
		format = accesslog.DetectFormat(src.peek(64 << 10))
	}
	p, err := newPipeline(&cfg, format)
	if err != nil {
		return nil, err
	}
	defer p.close()
	for {
		line, err := src.next()
		if err != nil {
			if err == io.EOF {
				break
			}
			if err == errTooLong {
				p.bad(src.line, nil, err)
				continue
			}
			return nil, fmt.Errorf("replay: reading line %d: %w", src.line+1, err)
		}
		p.line(src.line, line)
		if p.in.Lines&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if cfg.Progress != nil {
				cfg.Progress(src.raw.n.Load())
			}
		}
	}
	p.finish()
	if cfg.Progress != nil {
		cfg.Progress(src.raw.n.Load())
	}
	p.in.Late, p.in.LateMax, p.in.LateShift = p.reo.late, time.Duration(p.reo.lateMax), time.Duration(p.reo.shiftMax)
	p.in.ReorderFull = p.reo.early
	p.in.Simulated = p.sim.events
	return buildReport(p.sim, &cfg, p.in), nil
}

// pipeline is the per-line path: parse, filter, key, reorder, simulate.
type pipeline struct {
	cfg    *Config
	parser accesslog.Parser
	nExtra int
	er     *engineRun
	strs   stringTable
	sim    *simulator
	reo    *reorderer
	in     InputStats
	rec    accesslog.Record
	// Parsed lines wait here, pendBatch at a time, so that their key
	// table slots are loaded together (their cache misses overlapping)
	// before their keys are looked up, in input order.
	pend  [pendBatch]pendingLine
	npend int
}

// pendBatch is how many parsed lines wait for their key lookups.
const pendBatch = 16

// pendingLine is a parsed line whose key is still to be looked up.
type pendingLine struct {
	t, cost int64
	h       uint64 // the key's hash
	key     []byte // its own buffer, reused
	req     *engineRequest
}

func newPipeline(cfg *Config, format accesslog.Format) (*pipeline, error) {
	if err := cfg.Key.check(format); err != nil {
		return nil, err
	}
	fields := cfg.Fields
	fields.Extra = cfg.Key.Extra
	p := &pipeline{cfg: cfg, parser: accesslog.NewParser(format, fields), nExtra: len(fields.Extra)}
	for i := range p.pend {
		p.pend[i].key = make([]byte, 0, 256)
	}
	engineName := ""
	if cfg.Rules != nil {
		var err error
		if p.er, err = newEngineRun(cfg.Rules); err != nil {
			return nil, err
		}
		engineName = cfg.Rules.Name
		if engineName == "" {
			engineName = "rules"
		}
		p.strs = stringTable{m: make(map[string]string), max: 1 << 16}
	}
	p.sim = newSimulator(cfg.Policies, p.er, engineName, cfg.Suggest, cfg.Track, cfg.MaxKeys, max(cfg.Top, cfg.SuggestTop))
	p.sim.tap = cfg.Tap
	p.reo = &reorderer{window: int64(cfg.Reorder), maxQueued: max(cfg.ReorderLines, 1), sink: p.sim}
	if cfg.Reorder < 0 {
		p.reo.window = 0
	}
	p.in = InputStats{Format: format.String(), Reorder: max(cfg.Reorder, 0), ReorderLines: cfg.ReorderLines, Key: cfg.Key.String()}
	return p, nil
}

func (p *pipeline) close() {
	if p.er != nil {
		p.er.close()
	}
}

// bad counts a malformed line and keeps the first few as examples.
func (p *pipeline) bad(n int64, line []byte, err error) {
	p.in.Malformed++
	if bytes.IndexByte(line, 0) >= 0 {
		p.in.Binary++
	}
	if err == accesslog.ErrNoTime && p.in.FieldsSeen == nil {
		if names := p.parser.FieldNames(line); len(names) > 0 {
			p.in.FieldsSeen = names
			p.in.TimeFields = p.cfg.Fields.WithDefaults().Time
		}
	}
	if len(p.in.Examples) < p.cfg.Examples {
		if len(line) > 240 {
			line = line[:240]
		}
		p.in.Examples = append(p.in.Examples, Malformed{Line: n, Reason: err.Error(), Text: string(line)})
	}
}

// line processes line number n. It does not allocate for a well-formed
// line whose key has been seen before (outside Rules simulation).
func (p *pipeline) line(n int64, line []byte) {
	p.in.Lines++
	if len(bytes.TrimSpace(line)) == 0 {
		p.in.Blank++
		return
	}
	rec := &p.rec
	rec.Reset(p.nExtra)
	if err := p.parser.Parse(line, rec); err != nil {
		if err == accesslog.ErrHeader {
			p.in.Header++
			return
		}
		p.bad(n, line, err)
		return
	}
	if !p.cfg.Filter.match(rec) {
		p.in.Filtered++
		return
	}
	l := &p.pend[p.npend]
	l.key = p.cfg.Key.append(l.key[:0], rec)
	l.req = nil
	if p.er != nil {
		l.req = &engineRequest{method: p.strs.get(rec.Method), host: p.strs.get(rec.Host),
			path: p.strs.get(rec.Path), query: p.strs.get(rec.Query), addr: parseAddr(rec.Addr), status: parseStatus(rec.Status)}
	}
	l.t, l.cost, l.h = rec.Time, rec.Cost, p.sim.index.hash(l.key)
	if p.npend++; p.npend == pendBatch {
		p.flushPending()
	}
}

// flushPending loads the waiting lines' key table slots, then interns
// their keys and queues them, in input order.
func (p *pipeline) flushPending() {
	pend := p.pend[:p.npend]
	p.npend = 0
	sum := uint16(0)
	for i := range pend {
		sum += p.sim.index.slotLen(pend[i].h)
	}
	p.sim.index.sink += sum
	for i := range pend {
		l := &pend[i]
		p.reo.push(l.t, p.sim.internHashed(l.key, l.h), l.cost, l.req)
		l.req = nil
	}
}

// finish simulates everything still queued.
func (p *pipeline) finish() {
	p.flushPending()
	p.reo.flush()
}
