package adaptive

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"
)

// sketchAccuracy is the DDSketch's relative accuracy: a quantile is
// within 1% of the true value. sketchBins bounds its memory: 2048 bins
// at 1% cover about nine decades (1µs to 20 minutes) before the lowest
// ones collapse.
const (
	sketchAccuracy = 0.01
	sketchBins     = 2048
)

// Meter measures the exchanges of a gateway with one upstream, interval
// by interval, for a controller's latency, error_rate, in_flight and
// header signals. Begin and End (or Cancel) are called around every
// exchange, from any goroutine; Roll, from the controller's one
// goroutine, closes the interval. Only what the upstream answered, or a
// failure to reach it, may be measured: an answer the gateway made
// itself is Cancelled. Begin and End do not allocate (the sketch's bins grow only
// while the latency range widens, up to a bound).
type Meter struct {
	header   string // the response header field read, "" for none
	inFlight atomic.Int64

	mu         sync.Mutex
	cur, spare *ddsketch.DDSketch
	count      int64
	errors     int64
	headerVal  float64
	headerSeen bool
	headerBad  int64
	lastHeader float64 // the last good header value of any interval
	haveHeader bool
}

// NewMeter returns a meter; header, when not empty, is the response
// header field whose number End reads.
func NewMeter(header string) *Meter {
	m := &Meter{header: header}
	m.cur = newSketch()
	m.spare = newSketch()
	return m
}

func newSketch() *ddsketch.DDSketch {
	s, err := ddsketch.LogCollapsingLowestDenseDDSketch(sketchAccuracy, sketchBins)
	if err != nil {
		// The parameters are constants that the library accepts.
		panic("adaptive: DDSketch parameters: " + err.Error())
	}
	return s
}

// Header is the response header field End reads, or "".
func (m *Meter) Header() string { return m.header }

// Begin counts an exchange in flight.
func (m *Meter) Begin() { m.inFlight.Add(1) }

// End ends an exchange Begin counted: how long the upstream took to
// answer (to its response head), whether it failed (a 5xx, or no
// response at all), and the value of the meter's header field in the
// response (nil when absent or not read).
func (m *Meter) End(took time.Duration, failed bool, header []byte) {
	m.inFlight.Add(-1)
	var hv float64
	hok, hbad := false, false
	if len(header) > 0 {
		hv, hok = ParseHeaderValue(header)
		hbad = !hok
	}
	secs := max(took.Seconds(), 0)
	m.mu.Lock()
	_ = m.cur.Add(secs) // only negative or NaN values fail: never
	m.count++
	if failed {
		m.errors++
	}
	if hok {
		m.headerVal, m.headerSeen = hv, true
	}
	if hbad {
		m.headerBad++
	}
	m.mu.Unlock()
}

// Cancel ends an exchange Begin counted without measuring it: what ended
// it was not the upstream's doing (a request body the client broke or
// sent over the limit, a client gone before the answer, a limit of the
// gateway's own), so it says nothing about the origin's health.
func (m *Meter) Cancel() { m.inFlight.Add(-1) }

// Interval is what a Meter measured over one interval.
type Interval struct {
	// Exchanges is how many exchanges ended.
	Exchanges int64
	// Errors is how many of them failed.
	Errors int64
	// InFlight is the exchanges in flight at the end.
	InFlight int64
	// Header is the last value of the header field in the interval, or,
	// when no exchange ended, the last one of any interval. HeaderOK is
	// false when there is none: no header field configured, never seen,
	// or exchanges ended without a readable one.
	Header   float64
	HeaderOK bool
	// HeaderBad counts header values that were not numbers.
	HeaderBad int64

	sketch *ddsketch.DDSketch
}

// Quantile returns the latency quantile q (0 < q < 1) of the interval's
// exchanges in seconds, or 0 when none ended.
func (iv *Interval) Quantile(q float64) float64 {
	if iv.sketch == nil || iv.sketch.IsEmpty() {
		return 0
	}
	v, err := iv.sketch.GetValueAtQuantile(q)
	if err != nil {
		return 0
	}
	return v
}

// ErrorPercent is the percentage of the interval's exchanges that
// failed, 0 when none ended.
func (iv *Interval) ErrorPercent() float64 {
	if iv.Exchanges == 0 {
		return 0
	}
	return 100 * float64(iv.Errors) / float64(iv.Exchanges)
}

// Roll closes the interval and returns what it measured; the Interval is
// valid until the next Roll.
func (m *Meter) Roll() Interval {
	m.spare.Clear()
	m.mu.Lock()
	m.cur, m.spare = m.spare, m.cur
	iv := Interval{Exchanges: m.count, Errors: m.errors, HeaderBad: m.headerBad, sketch: m.spare}
	switch {
	case m.headerSeen:
		m.lastHeader, m.haveHeader = m.headerVal, true
		iv.Header, iv.HeaderOK = m.headerVal, true
	case m.count == 0 && m.haveHeader:
		iv.Header, iv.HeaderOK = m.lastHeader, true
	}
	m.count, m.errors, m.headerBad, m.headerSeen = 0, 0, 0, false
	m.mu.Unlock()
	iv.InFlight = max(m.inFlight.Load(), 0)
	return iv
}

// ParseHeaderValue reads a health value an origin sends in a header
// field: a decimal number, optionally followed by '%', with optional
// surrounding spaces ("73", " 12.5% "). Anything else (empty, NaN, an
// infinity, a list, more than 64 bytes) is refused. It does not
// allocate.
func ParseHeaderValue(b []byte) (float64, bool) {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	if len(b) > 0 && b[len(b)-1] == '%' {
		b = b[:len(b)-1]
	}
	if len(b) == 0 || len(b) > 64 {
		return 0, false
	}
	for _, c := range b {
		// Digits, sign, point and exponent only: no "inf", "nan", hex
		// or underscores, which ParseFloat would take.
		if !(c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E') {
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}
