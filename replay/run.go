package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// DefaultReorder is the reordering window when Config.Reorder is zero:
// web servers write a request's line when it ends, so lines commonly run
// up to a minute out of order.
const DefaultReorder = time.Minute

// Config says what to read and what to simulate. The zero value of each
// field is its documented default; Policies must not be empty.
type Config struct {
	// Format of the input; FormatAuto (the zero value) detects it.
	Format Format
	// Fields names the JSON fields or CSV columns; zero is DefaultFields.
	Fields Fields
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
	// Progress, if set, is called now and then with the number of input
	// bytes read so far (compressed bytes for gzip input).
	Progress func(read int64)
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
	if format == FormatAuto {
		format = DetectFormat(src.peek(64 << 10))
	}
	if err := cfg.Key.check(format); err != nil {
		return nil, err
	}
	fields := cfg.Fields
	fields.Extra = cfg.Key.Extra
	parser := newParser(format, fields)
	var (
		er         *engineRun
		engineName string
		strs       stringTable
	)
	if cfg.Rules != nil {
		if er, err = newEngineRun(cfg.Rules); err != nil {
			return nil, err
		}
		defer er.close()
		engineName = cfg.Rules.Name
		if engineName == "" {
			engineName = "rules"
		}
		strs = stringTable{m: make(map[string]string), max: 1 << 16}
	}
	sim := newSimulator(cfg.Policies, er, engineName, cfg.Suggest, cfg.Track)
	reo := &reorderer{window: int64(cfg.Reorder), sink: sim}
	if cfg.Reorder < 0 {
		reo.window = 0
	}
	in := InputStats{Format: format.String(), Reorder: max(cfg.Reorder, 0), Key: cfg.Key.String()}
	var (
		rec    Record
		keyBuf = make([]byte, 0, 256)
	)
	bad := func(line []byte, err error) {
		in.Malformed++
		if len(in.Examples) < cfg.Examples {
			if len(line) > 240 {
				line = line[:240]
			}
			in.Examples = append(in.Examples, Malformed{Line: src.line, Reason: err.Error(), Text: string(line)})
		}
	}
	for {
		line, err := src.next()
		if err != nil {
			if err == io.EOF {
				break
			}
			if err == errTooLong {
				bad(nil, err)
				continue
			}
			return nil, fmt.Errorf("replay: reading line %d: %w", src.line+1, err)
		}
		in.Lines++
		if in.Lines&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if cfg.Progress != nil {
				cfg.Progress(src.raw.n.Load())
			}
		}
		if len(bytes.TrimSpace(line)) == 0 {
			in.Blank++
			continue
		}
		rec.reset(len(fields.Extra))
		if err := parser.parse(line, &rec); err != nil {
			if err == errHeader {
				in.Header++
				continue
			}
			bad(line, err)
			continue
		}
		if rec.Cost < 0 {
			bad(line, errBadCost)
			continue
		}
		if !cfg.Filter.match(&rec) {
			in.Filtered++
			continue
		}
		keyBuf = cfg.Key.append(keyBuf[:0], &rec)
		var req *engineRequest
		if er != nil {
			req = &engineRequest{method: strs.get(rec.Method), host: strs.get(rec.Host),
				path: strs.get(rec.Path), query: strs.get(rec.Query), addr: parseAddr(rec.Addr)}
		}
		reo.push(rec.Time, sim.intern(keyBuf), rec.Cost, req)
	}
	reo.flush()
	if cfg.Progress != nil {
		cfg.Progress(src.raw.n.Load())
	}
	in.Late, in.LateMax = reo.late, time.Duration(reo.lateMax)
	in.Simulated = sim.events
	return buildReport(sim, &cfg, in), nil
}
