package redis

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// maxExact bounds the parameters and the products the scripts add to
// times: below it a double holds every integer exactly, with room for a sum
// or two. The sliding window's larger products are computed in limbs.
const maxExact = 1 << 50

// args is a policy in the scripts' terms: microseconds and counts.
type args struct {
	alg      limit.Algorithm
	p        [4]int64
	capacity int64     // Quota().Limit: a cost above it can never pass
	strs     [4]string // p, formatted for the wire
}

// encoded remembers the encoding of recently used policies (a gateway has
// a few, from its configuration), so a decision formats no parameters.
type encoded struct {
	m sync.Map // limit.Policy -> args
	n atomic.Int64
}

const maxEncoded = 4096

// get returns encode(p), from the memo when it can.
func (e *encoded) get(p limit.Policy) (args, error) {
	if p != nil {
		if a, ok := e.m.Load(p); ok {
			return a.(args), nil
		}
	}
	a, err := encode(p)
	if err != nil {
		return a, err
	}
	for i, v := range a.p {
		a.strs[i] = strconv.FormatInt(v, 10)
	}
	if e.n.Load() < maxEncoded {
		if _, loaded := e.m.LoadOrStore(p, a); !loaded {
			e.n.Add(1)
		}
	}
	return a, nil
}

// encode converts p to script parameters, refusing a policy the scripts
// cannot compute exactly.
func encode(p limit.Policy) (args, error) {
	if err := limit.Check(p); err != nil {
		return args{}, err
	}
	var a args
	a.alg = p.Algorithm()
	switch p := p.(type) {
	case limit.FixedWindow:
		w, err := micros("window", p.Window)
		if err != nil {
			return a, err
		}
		a.p = [4]int64{p.Limit, w}
		a.capacity = p.Limit
		return a, errors.Join(bound(p.Limit, 1, maxExact, "fixed_window: limit"), bound(w, 1, maxExact, "fixed_window: window (µs)"))
	case limit.SlidingLog:
		w, err := micros("window", p.Window)
		if err != nil {
			return a, err
		}
		a.p = [4]int64{p.Limit, w}
		a.capacity = p.Limit
		return a, bound(1, w, maxExact, "sliding_log: window")
	case limit.SlidingWindow:
		w, err := micros("window", p.Window)
		if err != nil {
			return a, err
		}
		a.p = [4]int64{p.Limit, w}
		a.capacity = p.Limit
		return a, errors.Join(bound(p.Limit, 1, maxExact, "sliding_window: limit"), bound(w, 1, maxExact, "sliding_window: window (µs)"))
	case limit.TokenBucket:
		t, err := micros("interval", time.Duration(p.Rate.Interval()))
		if err != nil {
			return a, err
		}
		b := p.Burst
		if b == 0 {
			b = p.Rate.Count
		}
		a.p = [4]int64{t, b}
		a.capacity = b
		return a, bound(t, b+2, maxExact, "token_bucket: interval × (burst+2)")
	case limit.LeakyBucket:
		t, err := micros("interval", time.Duration(p.Rate.Interval()))
		if err != nil {
			return a, err
		}
		a.p = [4]int64{t, p.Burst, int64(p.Mode), p.Delay}
		a.capacity = p.Burst + 1
		return a, bound(t, p.Burst+2, maxExact, "leaky_bucket: interval × (burst+2)")
	}
	return a, fmt.Errorf("%w: redis store: unsupported policy type %T", limit.ErrInvalidPolicy, p)
}

// micros returns d in whole microseconds, at least one.
func micros(what string, d time.Duration) (int64, error) {
	us := int64(d / time.Microsecond)
	if us < 1 {
		return 0, fmt.Errorf("%w: redis store: %s %v is below the store's 1µs resolution", limit.ErrInvalidPolicy, what, d)
	}
	return us, nil
}

// bound refuses x*y at or above max.
func bound(x, y int64, max uint64, what string) error {
	hi, lo := bits.Mul64(uint64(x), uint64(y))
	if hi != 0 || lo >= max {
		return fmt.Errorf("%w: redis store: %s = %d×%d exceeds %d, beyond exact Lua arithmetic", limit.ErrInvalidPolicy, what, x, y, max)
	}
	return nil
}
