package adaptive

import "github.com/tollgate-dev/tollgate/adaptive/adaptiveconf"

// The settings and the factor are package adaptiveconf's (free of what a
// controller runs on, so that a configuration parses without it); these
// are their names here.
type (
	// Settings are a controller's parameters (adaptiveconf.Settings).
	Settings = adaptiveconf.Settings
	// Signal is one health signal (adaptiveconf.Signal).
	Signal = adaptiveconf.Signal
	// Missing says what a failed signal does (adaptiveconf.Missing).
	Missing = adaptiveconf.Missing
	// Measure is what a signal measures (adaptiveconf.Measure).
	Measure = adaptiveconf.Measure
	// Source is where a signal's readings come from (adaptiveconf.Source).
	Source = adaptiveconf.Source
	// GradientSettings configure a Gradient (adaptiveconf.GradientSettings).
	GradientSettings = adaptiveconf.GradientSettings
	// Factor is a controller's published factor (adaptiveconf.Factor).
	Factor = adaptiveconf.Factor
)

// adaptiveconf's constants and functions, by their names here.
const (
	Base        = adaptiveconf.Base
	Hold        = adaptiveconf.Hold
	Tighten     = adaptiveconf.Tighten
	Latency     = adaptiveconf.Latency
	ErrorRate   = adaptiveconf.ErrorRate
	InFlight    = adaptiveconf.InFlight
	Header      = adaptiveconf.Header
	Prometheus  = adaptiveconf.Prometheus
	FleetRedis  = adaptiveconf.FleetRedis
	FleetGossip = adaptiveconf.FleetGossip
)

var (
	// ErrInvalidSettings reports Settings a controller cannot run with.
	ErrInvalidSettings = adaptiveconf.ErrInvalidSettings
	// ParseMeasure reads a measure's name.
	ParseMeasure = adaptiveconf.ParseMeasure
	// MeasureNames lists the measures' names.
	MeasureNames = adaptiveconf.MeasureNames
)
