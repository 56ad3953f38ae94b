package replay

import (
	"math"
	"time"
)

// The units of the Unix nanoseconds replay's times are.
const (
	nsSecond = int64(time.Second)
	nsMinute = int64(time.Minute)
	nsHour   = int64(time.Hour)
	nsDay    = 24 * nsHour
)

// series counts requests over time in equal buckets, per policy admitted
// and refused. The bucket width starts at one second and coarsens through
// seriesWidths whenever the span would need more than maxBuckets, so its
// memory is bounded whatever the log's length.
type series struct {
	width    int64 // bucket width, ns
	origin   int64 // start of bucket 0, a multiple of width
	started  bool
	policies int
	// Per bucket: requests, then for each policy admitted and refused.
	counts []int64
}

const maxBuckets = 1500

var seriesWidths = []int64{
	1 * nsSecond, 2 * nsSecond, 5 * nsSecond, 10 * nsSecond, 30 * nsSecond,
	nsMinute, 2 * nsMinute, 5 * nsMinute, 10 * nsMinute, 30 * nsMinute,
	nsHour, 2 * nsHour, 6 * nsHour, 12 * nsHour, nsDay, 7 * nsDay,
}

func newSeries(policies int) *series {
	return &series{width: nsSecond, policies: policies}
}

func (s *series) stride() int { return 1 + 2*s.policies }

// bucket returns the index of the bucket holding t, growing or coarsening
// the series as needed. Times before the origin (not expected: events
// arrive in order) land in bucket 0.
//
// Any two int64 times may be up to 2^64-1 ns (some 584 years) apart, more
// than an int64 holds, so the distance from the origin is taken as a
// uint64, which always holds it exactly; the width then coarsens (doubling
// past the last of seriesWidths) until the span fits maxBuckets, so the
// index is always in [0, maxBuckets) and the memory bounded.
func (s *series) bucket(t int64) int {
	if !s.started {
		s.started = true
		s.origin = floorTo(t, s.width)
	}
	if t < s.origin {
		return 0
	}
	for span(s.origin, t)/uint64(s.width) >= maxBuckets {
		s.coarsen()
	}
	b := int(span(s.origin, t) / uint64(s.width))
	n := (b + 1) * s.stride()
	for len(s.counts) < n {
		s.counts = append(s.counts, 0)
	}
	return b
}

// span returns t - from for t >= from, exact as a uint64 however far
// apart they are.
func span(from, t int64) uint64 { return uint64(t) - uint64(from) }

// floorTo returns t rounded down to a multiple of w > 0, or the smallest
// int64 when that multiple lies below it (the first times of the int64
// range): a bucket origin need not be a multiple of the width, only at or
// before every time it counts.
func floorTo(t, w int64) int64 {
	m := mod(t, w)
	if t < math.MinInt64+m {
		return math.MinInt64
	}
	return t - m
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// coarsen moves to the next width, merging buckets.
func (s *series) coarsen() {
	next := s.width * 2
	for _, w := range seriesWidths {
		if w > s.width {
			next = w
			break
		}
	}
	st := s.stride()
	origin := floorTo(s.origin, next)
	old := s.counts
	nb := 0
	if len(old) > 0 {
		last := s.origin + int64(len(old)/st-1)*s.width
		nb = int(span(origin, last)/uint64(next)) + 1
	}
	counts := make([]int64, nb*st)
	for i := 0; i < len(old)/st; i++ {
		t := s.origin + int64(i)*s.width
		j := int(span(origin, t) / uint64(next))
		for k := 0; k < st; k++ {
			counts[j*st+k] += old[i*st+k]
		}
	}
	s.width, s.origin, s.counts = next, origin, counts
}

// add records one request's outcome under each policy: bit i of refused
// set means policy i refused it.
func (s *series) request(t int64) int {
	b := s.bucket(t)
	s.counts[b*s.stride()]++
	return b
}

func (s *series) outcome(b, policy int, allowed bool) {
	i := b*s.stride() + 1 + 2*policy
	if !allowed {
		i++
	}
	s.counts[i]++
}

// SeriesData is a time series in a report: bucket i covers
// [Start+i*Width, Start+(i+1)*Width).
type SeriesData struct {
	// Start is the first bucket's start, Unix ns.
	Start int64 `json:"start"`
	// Width is the bucket width, ns.
	Width int64 `json:"width"`
	// Requests per bucket.
	Requests []int64 `json:"requests"`
	// Admitted and Refused per policy (in report order) per bucket.
	Admitted [][]int64 `json:"admitted"`
	Refused  [][]int64 `json:"refused"`
}

func (s *series) data() SeriesData {
	st := s.stride()
	nb := len(s.counts) / st
	d := SeriesData{Start: s.origin, Width: s.width, Requests: make([]int64, nb),
		Admitted: make([][]int64, s.policies), Refused: make([][]int64, s.policies)}
	for p := 0; p < s.policies; p++ {
		d.Admitted[p] = make([]int64, nb)
		d.Refused[p] = make([]int64, nb)
	}
	for b := 0; b < nb; b++ {
		d.Requests[b] = s.counts[b*st]
		for p := 0; p < s.policies; p++ {
			d.Admitted[p][b] = s.counts[b*st+1+2*p]
			d.Refused[p][b] = s.counts[b*st+2+2*p]
		}
	}
	return d
}
