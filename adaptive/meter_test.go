package adaptive

import (
	"math"
	"sync"
	"testing"
	"time"
)

func TestMeterInterval(t *testing.T) {
	m := NewMeter("X-Load")
	for i := 1; i <= 100; i++ {
		m.Begin()
		failed := i > 95
		m.End(time.Duration(i)*time.Millisecond, failed, []byte("42"))
	}
	m.Begin() // one still in flight
	m.Begin()
	m.End(time.Millisecond, false, []byte("not a number"))
	iv := m.Roll()
	if iv.Exchanges != 101 || iv.Errors != 5 || iv.InFlight != 1 {
		t.Fatalf("interval %+v", iv)
	}
	if p := iv.ErrorPercent(); math.Abs(p-500.0/101) > 1e-9 {
		t.Errorf("error percent %v", p)
	}
	// DDSketch: within 1% of the true quantile.
	if q := iv.Quantile(0.99); q < 0.099*0.99 || q > 0.100*1.01 {
		t.Errorf("p99 %v s, want about 0.1", q)
	}
	if q := iv.Quantile(0.5); q < 0.050*0.98 || q > 0.051*1.02 {
		t.Errorf("p50 %v s, want about 0.05", q)
	}
	if !iv.HeaderOK || iv.Header != 42 || iv.HeaderBad != 1 {
		t.Errorf("header %v %v bad %d", iv.Header, iv.HeaderOK, iv.HeaderBad)
	}
	// An empty interval: no latency, the last header value kept.
	iv = m.Roll()
	if iv.Exchanges != 0 || iv.Quantile(0.99) != 0 || iv.ErrorPercent() != 0 || !iv.HeaderOK || iv.Header != 42 {
		t.Fatalf("empty interval %+v", iv)
	}
	// Exchanges without the header: not OK.
	m.Begin()
	m.End(time.Millisecond, false, nil)
	if iv = m.Roll(); iv.HeaderOK {
		t.Fatalf("interval without the header reads %v", iv.Header)
	}
}

// A cancelled exchange leaves flight and is measured in nothing.
func TestMeterCancel(t *testing.T) {
	m := NewMeter("")
	m.Begin()
	m.Begin()
	if iv := m.Roll(); iv.InFlight != 2 {
		t.Fatalf("in flight %d, want 2", iv.InFlight)
	}
	m.Cancel()
	m.End(time.Millisecond, true, nil)
	if iv := m.Roll(); iv.InFlight != 0 || iv.Exchanges != 1 || iv.Errors != 1 {
		t.Fatalf("interval %+v, want one exchange, failed, none in flight", iv)
	}
}

func TestMeterConcurrent(t *testing.T) {
	m := NewMeter("")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 1000 {
				m.Begin()
				m.End(time.Duration(i)*time.Microsecond, i%10 == 0, nil)
			}
		})
	}
	var total, errs int64
	for range 20 {
		iv := m.Roll()
		total += iv.Exchanges
		errs += iv.Errors
	}
	wg.Wait()
	iv := m.Roll()
	total += iv.Exchanges
	errs += iv.Errors
	if total != 8000 || errs != 800 || iv.InFlight != 0 {
		t.Fatalf("total %d errors %d in flight %d", total, errs, iv.InFlight)
	}
}

func TestMeterEndAllocatesNothing(t *testing.T) {
	m := NewMeter("X-Load")
	for i := range 1000 { // the sketch's bins for this range
		m.End(time.Duration(i)*time.Microsecond, false, nil)
	}
	h := []byte("73.5%")
	n := testing.AllocsPerRun(1000, func() {
		m.Begin()
		m.End(500*time.Microsecond, false, h)
	})
	if n != 0 {
		t.Fatalf("%v allocs per exchange, want 0", n)
	}
}

func TestParseHeaderValue(t *testing.T) {
	good := map[string]float64{"73": 73, " 12.5% ": 12.5, "0": 0, "1e2": 100, "-3": -3}
	for in, want := range good {
		if v, ok := ParseHeaderValue([]byte(in)); !ok || v != want {
			t.Errorf("%q: %v %v, want %v", in, v, ok, want)
		}
	}
	for _, in := range []string{"", " ", "%", "NaN", "inf", "+Inf", "0x10", "1_000", "1,2", "12 13", "1e999", "abc",
		"1111111111111111111111111111111111111111111111111111111111111111111"} {
		if v, ok := ParseHeaderValue([]byte(in)); ok {
			t.Errorf("%q accepted as %v", in, v)
		}
	}
}
