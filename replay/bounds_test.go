package replay

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/accesslog"
	"github.com/tollgate-dev/tollgate/limit"
)

// Regression tests for values at and beyond the edges of int64: times
// outside the Unix-nanosecond range, logs spanning centuries, huge costs.

// runBounded runs in as CSV with a generous fixed window and fails the
// test if Run does not return within a few seconds.
func runBounded(t *testing.T, in string, policies ...Policy) *Report {
	t.Helper()
	if len(policies) == 0 {
		policies = []Policy{{Policy: limit.FixedWindow{Limit: 100, Window: time.Minute}}}
	}
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := Run(context.Background(), strings.NewReader(in), Config{Format: accesslog.FormatCSV,
			Key: mustKey(t, "key"), Suggest: true, Policies: policies})
		done <- result{rep, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.rep
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s")
	}
	return nil
}

func TestTimestampsOutsideInt64AreMalformed(t *testing.T) {
	for _, ts := range []string{
		"99999999999",                    // epoch seconds, year 5138
		"9999999999999",                  // epoch milliseconds, year 2286
		"999999999999999999",             // epoch microseconds, year 31690
		"9223372036.9",                   // the fraction takes it past the end
		"9999-12-31T23:59:59Z",           // the last ISO year
		"0001-01-01T00:00:00Z",           // the first ISO year
		"2262-04-11T23:47:16.854775808Z", // 1ns past the end
		"1677-09-21T00:12:43.145224191Z", // 1ns before the start
		"2262-04-11T23:47:16-01:00",      // in range only before its zone applies
		"[31/Dec/9999:23:59:59 +0000]",
		"[01/Jan/0001:00:00:00 +0000]",
	} {
		if v, ok := accesslog.ParseTime([]byte(ts)); ok {
			t.Errorf("%s parsed as %v, want malformed", ts, time.Unix(0, v).UTC())
		}
		in := "1431857103,a\n" + ts + ",a\n1431857104,a\n1431857105,a\n"
		rep := runBounded(t, in)
		if rep.Input.Malformed != 1 || rep.Input.Simulated != 3 {
			t.Errorf("%s: malformed %d, simulated %d; want 1 and 3", ts, rep.Input.Malformed, rep.Input.Simulated)
		}
		if first, last := rep.Input.First.Unix(), rep.Input.Last.Unix(); first != 1431857103 || last != 1431857105 {
			t.Errorf("%s: first %v, last %v", ts, rep.Input.First, rep.Input.Last)
		}
	}
}

// Two valid times further apart than an int64 of nanoseconds holds used to
// make the series index negative (a panic). The series now spans them with
// coarse buckets.
func TestRunTimestampsCenturiesApart(t *testing.T) {
	policies := []Policy{
		{Policy: limit.FixedWindow{Limit: 100, Window: time.Minute}},
		{Policy: limit.SlidingWindow{Limit: 100, Window: time.Minute}},
		{Policy: limit.TokenBucket{Rate: limit.Rate{Count: 10, Period: time.Second}, Burst: 20}},
	}
	for _, in := range []string{
		"1678-01-01T00:00:00Z,a\n2262-01-01T00:00:00Z,b\n",
		"1677-09-21T00:12:43.145224192Z,a\n2262-04-11T23:47:16.854775807Z,a\n",
		"1431857103,a\n1677-09-21T00:12:43.145224192Z,b\n2262-04-11T23:47:16.854775807Z,c\n",
	} {
		rep := runBounded(t, in, policies...)
		want := int64(strings.Count(in, "\n"))
		if rep.Input.Malformed != 0 || rep.Input.Simulated != want {
			t.Errorf("%q: malformed %d, simulated %d", in, rep.Input.Malformed, rep.Input.Simulated)
		}
		s := rep.Series
		if len(s.Requests) == 0 || len(s.Requests) > maxBuckets {
			t.Errorf("%q: %d buckets", in, len(s.Requests))
		}
		n := int64(0)
		for _, r := range s.Requests {
			n += r
		}
		if n != want {
			t.Errorf("%q: series holds %d requests, want %d", in, n, want)
		}
	}
}

func TestSeriesAnyInt64Times(t *testing.T) {
	for _, times := range [][]int64{
		{math.MinInt64, math.MaxInt64},
		{math.MinInt64 + 1, 0, math.MaxInt64},
		{-1, math.MaxInt64},
		{math.MinInt64, math.MinInt64 + 1, math.MaxInt64 - 1, math.MaxInt64},
	} {
		s := newSeries(1)
		for _, tm := range times {
			b := s.request(tm)
			s.outcome(b, 0, true)
			if b < 0 || b >= maxBuckets {
				t.Fatalf("%v: bucket %d for %d", times, b, tm)
			}
		}
		d := s.data()
		if len(d.Requests) > maxBuckets {
			t.Errorf("%v: %d buckets", times, len(d.Requests))
		}
		if d.Start > times[0] {
			t.Errorf("%v: series starts at %d, after the first time", times, d.Start)
		}
		n := int64(0)
		for _, r := range d.Requests {
			n += r
		}
		if n != int64(len(times)) {
			t.Errorf("%v: %d requests counted", times, n)
		}
	}
}

// A cost near 2^60 used to overflow a key's per-second sum and then the
// histogram's doubling, which never ended (and ran out of memory). Such a
// cost is now a bad one.
func TestRunHugeCostReturns(t *testing.T) {
	in := "timestamp,key,cost\n" + strings.Repeat("1431857103,a,999999999999999999\n", 5)
	rep := runBounded(t, in)
	if rep.Input.Malformed != 5 || rep.Input.Simulated != 0 {
		t.Errorf("malformed %d, simulated %d; want 5 and 0", rep.Input.Malformed, rep.Input.Simulated)
	}
	in = "timestamp,key,cost\n" + strings.Repeat("1431857103,a,"+strconv.Itoa(accesslog.MaxCost)+"\n", 5) +
		"1431857103,a," + strconv.Itoa(accesslog.MaxCost+1) + "\n"
	rep = runBounded(t, in)
	if rep.Input.Malformed != 1 || rep.Input.Simulated != 5 {
		t.Errorf("malformed %d, simulated %d; want 1 and 5", rep.Input.Malformed, rep.Input.Simulated)
	}
	if got := rep.PeakRates.PerSecond.Max; got != 5*accesslog.MaxCost {
		t.Errorf("peak per second %d, want %d", got, 5*accesslog.MaxCost)
	}
}

func TestHistogramHugeValues(t *testing.T) {
	done := make(chan Histogram, 1)
	go func() { done <- histogram(counted{3: 1, 1 << 62: 1, math.MaxInt64: 2}) }()
	var h Histogram
	select {
	case h = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("histogram did not return within 5s")
	}
	if n := len(h.Bounds); n != 64 || h.Bounds[n-2] != 1<<62 || h.Bounds[n-1] != math.MaxInt64 {
		t.Fatalf("bounds %v", h.Bounds)
	}
	if c := h.Counts; c[1] != 1 || c[len(c)-1] != 3 || h.Max != math.MaxInt64 {
		t.Errorf("counts %v, max %d", c, h.Max)
	}
}

// Reordering, lateness and the seam tracker subtract a window from a time
// and times from each other: at the ends of the range that must saturate,
// not wrap.
func TestRunArithmeticAtInt64Edges(t *testing.T) {
	// Out of order by half a second in the first minute of the range: the
	// reordering window (one minute, reaching before the range) holds it.
	rep := runBounded(t, "1677-09-21T00:12:44Z,a\n1677-09-21T00:12:43.5Z,a\n")
	if rep.Input.Simulated != 2 || rep.Input.Late != 0 {
		t.Errorf("simulated %d, late %d; want 2 and 0", rep.Input.Simulated, rep.Input.Late)
	}
	// Late by more than an int64 of nanoseconds: the lateness saturates.
	rep = runBounded(t, "2262-04-11T23:46:00Z,a\n2262-04-11T23:47:16Z,a\n1677-09-21T00:12:44Z,a\n")
	if rep.Input.Late != 1 || rep.Input.LateMax != math.MaxInt64 {
		t.Errorf("late %d, late max %d; want 1 and %d", rep.Input.Late, rep.Input.LateMax, int64(math.MaxInt64))
	}
	// A window reaching before the range still sees the burst in it.
	rep = runBounded(t, "1700-01-01T00:00:00Z,a\n1700-01-01T00:00:01Z,a\n1700-01-01T00:00:02Z,a\n",
		Policy{Policy: limit.FixedWindow{Limit: 10, Window: limit.MaxSpan}})
	if s := rep.Policies[0].Seam; s == nil || s.Admitted != 3 {
		t.Errorf("seam %+v, want 3 admitted", s)
	}
}
