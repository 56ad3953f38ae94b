package adaptive

import (
	"errors"
	"math"
	"testing"
	"time"
)

// clock is a fake clock: Unix ns advanced by hand, one interval a step.
type clock struct{ now int64 }

func (c *clock) tick(d time.Duration) int64 { c.now += int64(d); return c.now }

func ok(v float64) Reading { return Reading{Value: v, OK: true} }

func newTest(t *testing.T, s Settings) (*Controller, *clock) {
	t.Helper()
	c, err := NewController(s)
	if err != nil {
		t.Fatal(err)
	}
	return c, &clock{now: 1_000_000_000}
}

func oneSignal() Settings {
	return Settings{Name: "t", Signals: []Signal{{Name: "latency_p99", Threshold: 0.5, Weight: 1}}}
}

// step is one row of a step table: the readings of an interval and the
// factor and direction expected after it.
type step struct {
	readings []Reading
	factor   int64
	dir      Direction
}

func run(t *testing.T, c *Controller, clk *clock, steps []step) {
	t.Helper()
	for i, s := range steps {
		out := c.Step(s.readings, clk.tick(c.Settings().Interval))
		if out.Factor != s.factor || out.Direction != s.dir {
			t.Fatalf("step %d %v: factor %d %v, want %d %v (score %v)", i, s.readings, out.Factor, out.Direction, s.factor, s.dir, out.Score)
		}
		if out.Factor < c.Settings().Floor || out.Factor > Base {
			t.Fatalf("step %d: factor %d outside [%d, %d]", i, out.Factor, c.Settings().Floor, Base)
		}
	}
}

func TestDecreaseInProportionToScore(t *testing.T) {
	c, clk := newTest(t, oneSignal())
	run(t, c, clk, []step{
		{[]Reading{ok(0.75)}, 750, Decreasing}, // breach 0.5: ×(1-0.5·0.5)
		{[]Reading{ok(1.0)}, 375, Decreasing},  // breach 1: ×0.5
		{[]Reading{ok(5.0)}, 187, Decreasing},  // breach capped at 1
		{[]Reading{ok(0.5)}, 187, Steady},      // at the threshold: dead band
	})
}

func TestFloor(t *testing.T) {
	s := oneSignal()
	s.Floor = 200
	c, clk := newTest(t, s)
	run(t, c, clk, []step{
		{[]Reading{ok(9)}, 500, Decreasing},
		{[]Reading{ok(9)}, 250, Decreasing},
		{[]Reading{ok(9)}, 200, Decreasing},
		{[]Reading{ok(9)}, 200, Steady}, // at the floor
	})
}

func TestRecoveryIsAdditiveUpToBase(t *testing.T) {
	s := oneSignal()
	s.Recovery = 300
	c, clk := newTest(t, s)
	run(t, c, clk, []step{
		{[]Reading{ok(1)}, 500, Decreasing},
		{[]Reading{ok(0.1)}, 800, Recovering},
		{[]Reading{ok(0.1)}, 1000, Recovering},
		{[]Reading{ok(0.1)}, 1000, Steady},
	})
}

func TestRecoveryCatchesUpElapsedIntervals(t *testing.T) {
	c, clk := newTest(t, oneSignal())
	c.Step([]Reading{ok(1)}, clk.tick(time.Second)) // 500
	// Three intervals late: three recoveries.
	out := c.Step([]Reading{ok(0)}, clk.tick(3*time.Second))
	if out.Factor != 650 {
		t.Fatalf("factor %d after a step 3 intervals late, want 650", out.Factor)
	}
	// A clock going backwards recovers one interval, never a negative.
	out = c.Step([]Reading{ok(0)}, clk.now-int64(time.Hour))
	if out.Factor != 700 {
		t.Fatalf("factor %d after a step back in time, want 700", out.Factor)
	}
}

func TestWeights(t *testing.T) {
	s := Settings{Signals: []Signal{
		{Name: "latency", Threshold: 1, Weight: 0.4},
		{Name: "errors", Threshold: 0.05, Weight: 0.4},
		{Name: "cpu", Threshold: 80, Weight: 0.2},
	}, Decrease: 1}
	c, clk := newTest(t, s)
	// Only cpu breaches fully: score 0.2, cut 20%.
	out := c.Step([]Reading{ok(0.5), ok(0.01), ok(160)}, clk.tick(time.Second))
	if math.Abs(out.Score-0.2) > 1e-9 || out.Factor != 800 {
		t.Fatalf("score %v factor %d, want 0.2 and 800", out.Score, out.Factor)
	}
	if out.Breaches[0] || out.Breaches[1] || !out.Breaches[2] {
		t.Fatalf("breaches %v, want only cpu", out.Breaches)
	}
	// Latency half breached, errors fully: (0.4·0.5 + 0.4·1)/1 = 0.6.
	out = c.Step([]Reading{ok(1.5), ok(0.5), ok(10)}, clk.tick(time.Second))
	if math.Abs(out.Score-0.6) > 1e-9 || out.Factor != 320 {
		t.Fatalf("score %v factor %d, want 0.6 and 320", out.Score, out.Factor)
	}
}

func TestHysteresis(t *testing.T) {
	s := oneSignal() // threshold 0.5, hysteresis 0.1: healthy at ≤ 0.45
	s.RecoverAfter = 2
	c, clk := newTest(t, s)
	run(t, c, clk, []step{
		{[]Reading{ok(1)}, 500, Decreasing},
		{[]Reading{ok(0.48)}, 500, Steady},     // under the threshold, in the band
		{[]Reading{ok(0.40)}, 500, Steady},     // healthy 1 of 2
		{[]Reading{ok(0.49)}, 500, Steady},     // band: the run restarts
		{[]Reading{ok(0.40)}, 500, Steady},     // healthy 1 of 2
		{[]Reading{ok(0.40)}, 550, Recovering}, // healthy 2 of 2
		{[]Reading{ok(0.40)}, 600, Recovering},
	})
}

func TestMissingHolds(t *testing.T) {
	s := Settings{Signals: []Signal{{Name: "a", Threshold: 1, Weight: 1}, {Name: "b", Threshold: 1, Weight: 1}}}
	c, clk := newTest(t, s)
	run(t, c, clk, []step{
		{[]Reading{ok(2), ok(0)}, 750, Decreasing},
		{[]Reading{ok(0), {}}, 750, Steady},              // b down: no recovery
		{[]Reading{ok(0), ok(math.NaN())}, 750, Steady},  // garbage is missing
		{[]Reading{ok(0), ok(math.Inf(1))}, 750, Steady}, // so is infinity
		{[]Reading{ok(2), {}}, 562, Decreasing},          // a breaches: still cuts
		{[]Reading{ok(0)}, 562, Steady},                  // too few readings
		{[]Reading{ok(0), ok(0)}, 612, Recovering},
	})
}

func TestMissingTightens(t *testing.T) {
	s := oneSignal()
	s.OnMissing = Tighten
	s.Floor = 300
	c, clk := newTest(t, s)
	run(t, c, clk, []step{
		{[]Reading{{}}, 500, Decreasing},
		{[]Reading{{}}, 300, Decreasing},
		{[]Reading{{}}, 300, Steady},
	})
}

func TestTurned(t *testing.T) {
	s := oneSignal()
	s.Recovery = 100
	c, clk := newTest(t, s)
	var turns []bool
	for _, v := range []float64{1, 1, 0, 0, 1, 0.48} {
		turns = append(turns, c.Step([]Reading{ok(v)}, clk.tick(time.Second)).Turned)
	}
	want := []bool{true, false, true, false, true, false}
	for i := range want {
		if turns[i] != want[i] {
			t.Fatalf("turned %v, want %v", turns, want)
		}
	}
}

func TestSetFactorClamps(t *testing.T) {
	c, _ := newTest(t, oneSignal())
	c.SetFactor(5)
	if c.Factor() != 100 {
		t.Fatalf("factor %d, want the floor 100", c.Factor())
	}
	c.SetFactor(5000)
	if c.Factor() != Base {
		t.Fatalf("factor %d, want the base", c.Factor())
	}
}

func TestInvalidSettings(t *testing.T) {
	bad := []Settings{
		{},
		{Signals: []Signal{{Threshold: 0, Weight: 1}}},
		{Signals: []Signal{{Threshold: 1, Weight: -1}}},
		{Signals: []Signal{{Threshold: math.NaN(), Weight: 1}}},
		{Signals: []Signal{{Threshold: 1, Weight: 1}}, Floor: 1001},
		{Signals: []Signal{{Threshold: 1, Weight: 1}}, Decrease: 1.5},
		{Signals: []Signal{{Threshold: 1, Weight: 1}}, Hysteresis: 1},
		{Signals: []Signal{{Threshold: 1, Weight: 1}}, Recovery: -3},
		{Signals: []Signal{{Threshold: 1, Weight: 1}}, Interval: time.Microsecond},
	}
	for i, s := range bad {
		if _, err := NewController(s); !errors.Is(err, ErrInvalidSettings) {
			t.Errorf("settings %d: %v, want ErrInvalidSettings", i, err)
		}
	}
}

func TestFactor(t *testing.T) {
	var f Factor
	if f.Permille() != Base {
		t.Fatalf("zero Factor reads %d", f.Permille())
	}
	for _, c := range []struct{ in, want int64 }{{500, 500}, {0, 1}, {2000, 1000}} {
		f.Store(c.in)
		if f.Permille() != c.want {
			t.Errorf("Store(%d): %d, want %d", c.in, f.Permille(), c.want)
		}
	}
}
