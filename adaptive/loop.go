package adaptive

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Fleet shares controllers' factors between the gateways of a fleet, so
// that every node applies the lowest factor any of them computed.
type Fleet interface {
	// Publish records this node's factor (permille) for the controller
	// name, at now.
	Publish(ctx context.Context, name string, factor int64, now time.Time) error
	// Lowest returns the lowest factor any node published for name no
	// longer than maxAge before now, and false when none did.
	Lowest(ctx context.Context, name string, now time.Time, maxAge time.Duration) (int64, bool, error)
}

// Observer receives what a Loop does, for metrics. Its methods are
// called from the loop's goroutine.
type Observer interface {
	// Stepped reports a step: the outcome, the readings it used (valid
	// until the next step) and the factor published (the fleet's when
	// lower).
	Stepped(s *Settings, out Outcome, readings []Reading, published int64)
	// Failed reports a signal whose source failed, with a short reason
	// ("timeout", "refused", "garbage", ...).
	Failed(s *Settings, signal int, reason string)
	// FleetFailed reports a failed exchange with the fleet.
	FleetFailed(s *Settings, err error)
}

// LoopConfig is what a Loop runs with.
type LoopConfig struct {
	// Settings are the controller's.
	Settings Settings
	// Client scrapes Prometheus signals; nil means a client of its own.
	Client *http.Client
	// Fleet, when set (and Settings.FleetTier is), shares the factor.
	Fleet Fleet
	// Observer, when set, is told of every step and failure.
	Observer Observer
	// Logger receives a line at each change of direction. Nil: none.
	Logger *slog.Logger
}

// Loop runs one controller: every interval it reads the signals, steps
// the controller and publishes the factor; with a fleet, it also reads
// the fleet's factor four times an interval (at most every 250ms).
type Loop struct {
	cfg      LoopConfig
	ctl      *Controller
	factor   Factor
	meter    *Meter
	scrapers []*Scraper // by signal; nil for the others
	readings []Reading
	lowest   int64 // the fleet's lowest factor last read, 0 for none

	stop context.CancelFunc
	done chan struct{}
	once sync.Once
}

// NewLoop builds a loop; it does not start it (Start or Tick).
func NewLoop(cfg LoopConfig) (*Loop, error) {
	ctl, err := NewController(cfg.Settings)
	if err != nil {
		return nil, err
	}
	cfg.Settings = ctl.Settings()
	l := &Loop{cfg: cfg, ctl: ctl, readings: make([]Reading, len(cfg.Settings.Signals))}
	header := ""
	measured := false
	client := cfg.Client
	for i, sg := range cfg.Settings.Signals {
		switch sg.Source.Measure {
		case Latency, ErrorRate, InFlight:
			measured = true
		case Header:
			measured, header = true, sg.Source.Header
		case Prometheus:
			if client == nil {
				client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute}}
			}
			if l.scrapers == nil {
				l.scrapers = make([]*Scraper, len(cfg.Settings.Signals))
			}
			timeout := sg.Source.Timeout
			if timeout == 0 {
				timeout = cfg.Settings.Interval / 2
			}
			l.scrapers[i] = &Scraper{URL: sg.Source.URL, Metric: sg.Source.Metric, Labels: sg.Source.Labels, Timeout: timeout, Client: client}
		}
	}
	if measured {
		l.meter = NewMeter(header)
	}
	return l, nil
}

// Settings returns the loop's controller settings, defaults filled.
func (l *Loop) Settings() *Settings { return &l.cfg.Settings }

// Factor is the published factor, for the rule engine (rules.Scale).
func (l *Loop) Factor() *Factor { return &l.factor }

// Meter is the meter of the upstream's exchanges, or nil when no signal
// is measured by the gateway.
func (l *Loop) Meter() *Meter { return l.meter }

// Start runs the loop in a goroutine until Close.
func (l *Loop) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	l.stop, l.done = cancel, make(chan struct{})
	go l.run(ctx)
}

// Close stops a started loop and waits for it.
func (l *Loop) Close() {
	l.once.Do(func() {
		if l.stop != nil {
			l.stop()
			<-l.done
		}
	})
}

func (l *Loop) run(ctx context.Context) {
	defer close(l.done)
	step := time.NewTicker(l.cfg.Settings.Interval)
	defer step.Stop()
	var poll <-chan time.Time
	if l.shared() {
		t := time.NewTicker(min(l.cfg.Settings.Interval/4, 250*time.Millisecond))
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-step.C:
			l.Tick(ctx, now)
		case now := <-poll:
			l.Poll(ctx, now)
		}
	}
}

func (l *Loop) shared() bool { return l.cfg.Fleet != nil && l.cfg.Settings.FleetTier != "" }

// Tick is one step of the controller at now: read the signals, step,
// share with the fleet, publish. Run calls it every interval; tests call
// it with a fake clock.
func (l *Loop) Tick(ctx context.Context, now time.Time) Outcome {
	s := &l.cfg.Settings
	l.read(ctx)
	if l.lowest > 0 {
		// The fleet cut further than this node: start from there, so
		// that the fleet moves as one controller.
		l.ctl.SetFactor(min(l.ctl.Factor(), l.lowest))
	}
	out := l.ctl.Step(l.readings, now.UnixNano())
	published := out.Factor
	if l.shared() {
		if err := l.cfg.Fleet.Publish(ctx, s.Name, out.Factor, now); err != nil {
			l.fleetFailed(err)
		}
		l.lowest = 0 // this node's new factor stands until the next poll
	}
	l.factor.Store(published)
	if l.cfg.Observer != nil {
		l.cfg.Observer.Stepped(s, out, l.readings, published)
	}
	if out.Turned && l.cfg.Logger != nil {
		l.cfg.Logger.Info("adaptive: factor changed direction", "controller", s.Name,
			"direction", out.Direction.String(), "factor_permille", out.Factor, "score", out.Score)
	}
	return out
}

// Poll reads the fleet's lowest factor and publishes it when lower than
// this node's.
func (l *Loop) Poll(ctx context.Context, now time.Time) {
	if !l.shared() {
		return
	}
	s := &l.cfg.Settings
	low, ok, err := l.cfg.Fleet.Lowest(ctx, s.Name, now, 3*s.Interval)
	if err != nil {
		l.fleetFailed(err)
		return
	}
	own := l.ctl.Factor()
	if !ok {
		low = own
	}
	low = min(max(low, s.Floor), Base)
	l.lowest = low
	l.factor.Store(min(own, low))
}

func (l *Loop) fleetFailed(err error) {
	if l.cfg.Observer != nil {
		l.cfg.Observer.FleetFailed(&l.cfg.Settings, err)
	}
}

// read fills l.readings for this interval.
func (l *Loop) read(ctx context.Context) {
	var iv Interval
	if l.meter != nil {
		iv = l.meter.Roll()
	}
	var wg sync.WaitGroup
	for i, sg := range l.cfg.Settings.Signals {
		r := &l.readings[i]
		*r = Reading{OK: true}
		switch sg.Source.Measure {
		case Latency:
			r.Value = iv.Quantile(sg.Source.Quantile)
		case ErrorRate:
			r.Value = iv.ErrorPercent()
		case InFlight:
			r.Value = float64(iv.InFlight)
		case Header:
			if iv.HeaderBad > 0 {
				l.failed(i, ReasonGarbage)
			}
			switch {
			case iv.HeaderOK:
				r.Value = iv.Header
			case iv.Exchanges == 0:
				// No exchange, none ever with the field: no evidence
				// of load, and no failure either.
			default:
				*r = Reading{}
				if iv.HeaderBad == 0 {
					l.failed(i, ReasonAbsent)
				}
			}
		case Prometheus:
			sc := l.scrapers[i]
			wg.Go(func() {
				v, err := sc.Read(ctx)
				if err != nil {
					*r = Reading{}
					l.failed(i, failureReason(err))
					return
				}
				r.Value = v
			})
		}
	}
	wg.Wait()
}

func (l *Loop) failed(i int, reason string) {
	if l.cfg.Observer != nil {
		l.cfg.Observer.Failed(&l.cfg.Settings, i, reason)
	}
}
