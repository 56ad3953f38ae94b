package adaptive

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Base is the factor of a policy applied as configured, in permille.
const Base = 1000

// maxCatchUp bounds the intervals one Step recovers for when it comes
// late (a stalled ticker, a paused process).
const maxCatchUp = 10

// Missing says what a signal whose source failed does to the factor.
type Missing uint8

const (
	// Hold counts a missing signal as neither breach nor health: it adds
	// nothing to the score and stops recovery while it lasts.
	Hold Missing = iota
	// Tighten counts a missing signal as a full breach.
	Tighten
)

// String names m as configuration spells it: "hold" or "tighten".
func (m Missing) String() string {
	if m == Tighten {
		return "tighten"
	}
	return "hold"
}

// Signal is one health signal as the controller sees it: a threshold and
// a weight. What it measures (and in which unit) is the caller's affair;
// Threshold is in the same unit as the readings.
type Signal struct {
	// Name labels the signal in metrics and logs ("latency_p99",
	// "error_rate", "header:X-Origin-CPU", ...).
	Name string
	// Threshold is the value above which the signal breaches; > 0.
	Threshold float64
	// Weight is the signal's share of the score; > 0.
	Weight float64
	// Source says where the readings come from, for the runner that
	// takes them; the arithmetic does not read it.
	Source Source
}

// Settings are a controller's parameters. The zero value of each
// optional field means its documented default (Defaults fills them).
type Settings struct {
	// Name names the controller in metrics, logs and policies.
	Name string
	// Signals are read every interval; at least one.
	Signals []Signal
	// Interval is the time between steps. Default 1s.
	Interval time.Duration
	// Floor is the lowest factor, in permille (1-1000). Default 100
	// (a tenth of the base).
	Floor int64
	// Decrease is the fraction cut from the factor at a full breach
	// (score 1), 0 < Decrease ≤ 1. Default 0.5.
	Decrease float64
	// Recovery is the permille added per healthy interval (1-1000).
	// Default 50.
	Recovery int64
	// Hysteresis is how far below its threshold, as a fraction of it
	// (0 ≤ Hysteresis < 1), every signal must be for an interval to count
	// as healthy. Default 0.1; set NoHysteresis for none.
	Hysteresis float64
	// NoHysteresis makes a signal at or below its threshold healthy.
	NoHysteresis bool
	// RecoverAfter is how many healthy intervals in a row come before
	// the factor recovers. Default 1.
	RecoverAfter int
	// OnMissing is what a signal whose source failed does. Default Hold.
	OnMissing Missing

	// Upstream is the upstream URL whose exchanges the gateway measures
	// (Latency, ErrorRate, InFlight, Header); for the runner.
	Upstream string
	// FleetTier is the tier through which the gateways of a fleet share
	// one factor (LoopConfig.Fleet): FleetRedis or FleetGossip; "" for
	// this gateway alone. For the runner.
	FleetTier string
}

// ErrInvalidSettings reports Settings a controller cannot run with.
var ErrInvalidSettings = errors.New("adaptive: invalid settings")

// Defaults fills the zero optional fields of s.
func (s *Settings) Defaults() {
	if s.Interval == 0 {
		s.Interval = time.Second
	}
	if s.Floor == 0 {
		s.Floor = 100
	}
	if s.Decrease == 0 {
		s.Decrease = 0.5
	}
	if s.Recovery == 0 {
		s.Recovery = 50
	}
	if s.Hysteresis == 0 && !s.NoHysteresis {
		s.Hysteresis = 0.1
	}
	if s.RecoverAfter == 0 {
		s.RecoverAfter = 1
	}
}

// Validate reports every problem with s (after Defaults), each wrapping
// ErrInvalidSettings.
func (s *Settings) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidSettings}, args...)...))
	}
	if len(s.Signals) == 0 {
		bad("no signals: the controller would never move")
	}
	for i, sg := range s.Signals {
		if !(sg.Threshold > 0) || math.IsInf(sg.Threshold, 0) {
			bad("signals[%d] (%s): threshold %v must be positive", i, sg.Name, sg.Threshold)
		}
		if !(sg.Weight > 0) || math.IsInf(sg.Weight, 0) {
			bad("signals[%d] (%s): weight %v must be positive", i, sg.Name, sg.Weight)
		}
	}
	if s.Interval < time.Millisecond {
		bad("interval %v must be at least 1ms", s.Interval)
	}
	if s.Floor < 1 || s.Floor > Base {
		bad("floor %d‰ must be from 1 to 1000", s.Floor)
	}
	if !(s.Decrease > 0 && s.Decrease <= 1) {
		bad("decrease %v must be in (0, 1]", s.Decrease)
	}
	if s.Recovery < 1 || s.Recovery > Base {
		bad("recovery %d‰ must be from 1 to 1000", s.Recovery)
	}
	if !(s.Hysteresis >= 0 && s.Hysteresis < 1) {
		bad("hysteresis %v must be in [0, 1)", s.Hysteresis)
	}
	if s.RecoverAfter < 1 {
		bad("recover_after %d must be at least 1", s.RecoverAfter)
	}
	if s.OnMissing > Tighten {
		bad("on_missing %d unknown", s.OnMissing)
	}
	return errors.Join(errs...)
}

// Reading is one signal's value for one interval. OK is false when its
// source failed (then Value is ignored); a NaN or infinite Value is
// missing too.
type Reading struct {
	Value float64
	OK    bool
}

// Direction is where the factor went at a step.
type Direction int8

// The directions.
const (
	Steady     Direction = 0
	Decreasing Direction = -1
	Recovering Direction = 1
)

// String names d: "steady", "decreasing" or "recovering".
func (d Direction) String() string {
	switch d {
	case Decreasing:
		return "decreasing"
	case Recovering:
		return "recovering"
	}
	return "steady"
}

// Outcome is the result of one Step.
type Outcome struct {
	// Factor is the new factor, in permille, in [Floor, Base].
	Factor int64
	// Score is the breach score S, in [0, 1].
	Score float64
	// Breaches is, per signal, whether it was above its threshold (or
	// missing under Tighten).
	Breaches []bool
	// Missing counts the signals whose reading was missing.
	Missing int
	// Direction is where the factor went (Steady when held or already at
	// a bound).
	Direction Direction
	// Turned is true when Direction differs from the last step's that
	// was not Steady: the factor changed direction (worth a log line).
	Turned bool
}

// Controller is the arithmetic of one adaptive controller. It is not safe
// for concurrent use: one goroutine (the runner) steps it.
type Controller struct {
	s        Settings
	factor   int64
	last     int64 // time of the last step, Unix ns; 0 before the first
	healthy  int   // healthy intervals in a row
	lastMove Direction
	breaches []bool
}

// NewController returns a controller at the base factor. s is completed
// with Defaults and must then be valid.
func NewController(s Settings) (*Controller, error) {
	s.Defaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &Controller{s: s, factor: Base, breaches: make([]bool, len(s.Signals))}, nil
}

// Settings returns the controller's settings, defaults filled.
func (c *Controller) Settings() Settings { return c.s }

// Factor returns the current factor, in permille.
func (c *Controller) Factor() int64 { return c.factor }

// SetFactor moves the factor to f, clamped to [Floor, Base]: the fleet's
// factor adopted by this node.
func (c *Controller) SetFactor(f int64) { c.factor = c.clamp(f) }

func (c *Controller) clamp(f int64) int64 { return min(max(f, c.s.Floor), Base) }

// Step advances the controller to now (Unix ns) with one reading per
// signal (in Settings.Signals order; missing entries are missing
// readings) and returns the outcome. The Breaches slice is reused by the
// next Step.
func (c *Controller) Step(readings []Reading, now int64) Outcome {
	elapsed := int64(1)
	if c.last != 0 && now > c.last {
		elapsed = min(max((now-c.last)/int64(c.s.Interval), 1), maxCatchUp)
	}
	c.last = max(c.last, now)

	var sum, weights float64
	missing := 0
	healthy := true
	for i, sg := range c.s.Signals {
		c.breaches[i] = false
		weights += sg.Weight
		var r Reading
		if i < len(readings) {
			r = readings[i]
		}
		if !r.OK || math.IsNaN(r.Value) || math.IsInf(r.Value, 0) {
			missing++
			healthy = false
			if c.s.OnMissing == Tighten {
				sum += sg.Weight
				c.breaches[i] = true
			}
			continue
		}
		if b := (r.Value - sg.Threshold) / sg.Threshold; b > 0 {
			sum += sg.Weight * min(b, 1)
			c.breaches[i] = true
		}
		if r.Value > sg.Threshold*(1-c.s.Hysteresis) {
			healthy = false
		}
	}
	score := 0.0
	if weights > 0 {
		score = min(max(sum/weights, 0), 1)
	}
	out := Outcome{Score: score, Breaches: c.breaches, Missing: missing}
	prev := c.factor
	switch {
	case score > 0:
		c.healthy = 0
		// The kept share in millionths, so that float noise in the
		// score does not cost a permille: then integer arithmetic.
		keep := int64(math.Round((1 - c.s.Decrease*score) * 1e6))
		c.factor = c.clamp(c.factor * keep / 1e6)
	case healthy:
		c.healthy++
		if c.healthy >= c.s.RecoverAfter {
			c.factor = c.clamp(c.factor + c.s.Recovery*elapsed)
		}
	default:
		c.healthy = 0
	}
	switch {
	case c.factor < prev:
		out.Direction = Decreasing
	case c.factor > prev:
		out.Direction = Recovering
	}
	if out.Direction != Steady {
		out.Turned = c.lastMove != Steady && out.Direction != c.lastMove || c.lastMove == Steady && out.Direction == Decreasing
		c.lastMove = out.Direction
	}
	out.Factor = c.factor
	return out
}
