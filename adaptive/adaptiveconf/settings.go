// Package adaptiveconf is what an adaptive controller and a gradient
// concurrency limit are configured with: the settings package adaptive
// runs (Settings, Signal, Source, GradientSettings), their defaults and
// checks, and the factor they publish (Factor), apart from package
// adaptive, so that a configuration file can be parsed without what
// adaptive runs on (DDSketch, Prometheus's parser). The file's own
// spelling of them is here too: Controller (adaptive.NAME) and
// Concurrency (routes[].adaptive_concurrency), which package config
// embeds, with the conversion and checks that turn them into Settings and
// GradientSettings, each problem reported at its key's path for config to
// place at file:line. Package adaptive names the settings by aliases
// (adaptive.Settings is this Settings). It imports the standard library
// only (a test in package config keeps it so).
package adaptiveconf

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Base is the factor of a policy applied as configured, in permille.
const Base = 1000

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

// The tiers a factor is shared through (Settings.FleetTier).
const (
	FleetRedis  = "redis"
	FleetGossip = "gossip"
)
