package adaptive

import (
	"math"
)

// maxCatchUp bounds the intervals one Step recovers for when it comes
// late (a stalled ticker, a paused process).
const maxCatchUp = 10

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
