package redis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// FuzzStoresAgree is the differential test of the three implementations of
// the algorithms: the input is read as one to three policies (any
// algorithm, any parameters the Redis store accepts) and up to 64 steps
// (a clock step, forwards or back, then Apply on one policy's key,
// ApplyAll on all of them, or a Sync charging one key beyond its
// capacity, with arbitrary costs), and every decision of
// package limit (pure), of the memory store, and of the Redis store's Lua
// scripts with the over-limit cache off and on must agree on every field.
// It needs redis-server (see internal/redistest).
//
// The memory store is not compared after a Sync, which it has not seen.
// The memory store and the over-limit cache are compared until the clock
// first steps back. The memory store drops a state found idle (package
// limit allows a store that), except a hot token-bucket key's, so a clock
// stepping back behind that instant finds a fresh key where the
// algorithm, given the state, clamps to it; its own clock is monotonic.
// Behind a state's instant the algorithms clamp to it, so a refusal's
// durations stop falling with the clock, while a cached refusal's go on
// falling: off by at most the step back.
func FuzzStoresAgree(f *testing.F) {
	srv := redistest.Start(f)
	clock := new(limittest.Clock)
	var plain, cached *Store
	for _, c := range []struct {
		s      **Store
		cache  int
		prefix string
	}{{&plain, -1, "plain:"}, {&cached, 0, "cached:"}} {
		s, err := New(context.Background(), Config{
			Addrs: []string{srv.Addr}, Clock: clock.Now, CacheSize: c.cache, Prefix: c.prefix,
			Timeout: 10 * time.Second, BreakerFailures: 1 << 30,
		})
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { s.Close() })
		*c.s = s
	}
	for _, seed := range differentialSeeds {
		f.Add(seed)
	}
	inputs := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzInput{b: data}
		pols := in.policies()
		if len(pols) == 0 {
			return
		}
		inputs++
		mem, err := memory.New(memory.Config{Shards: 1, MaxKeys: 64, SweepInterval: -1, Clock: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer mem.Close()
		stores := []struct {
			name string
			s    limit.Store
		}{{"memory", mem}, {"redis", plain}, {"redis+cache", cached}}
		refs := make([]*reference, len(pols))
		keys := make([]string, len(pols))
		for i, p := range pols {
			refs[i] = &reference{p: p}
			keys[i] = fmt.Sprintf("diff%d/%d", inputs, i)
		}
		now := limittest.Base
		ctx := context.Background()
		back := false   // the clock has stepped back
		forced := false // Sync has charged a key
		for step := 0; step < 64 && !in.done(); step++ {
			next := max(now+in.step(), 0)
			back = back || next < now
			now = next
			clock.Set(now)
			var (
				want limit.Decision
				reqs []limit.Request
				what string
			)
			op := in.byte()
			if op%8 == 7 {
				i := int(in.byte()) % len(pols)
				if sp, ok := pols[i].(limit.Stateful); ok {
					syncAgrees(t, step, []*Store{plain, cached}, refs[i], keys[i], sp, in.cost(sp), now)
					forced = true
					continue
				}
			}
			if op%4 == 0 && len(pols) > 1 {
				reqs = make([]limit.Request, len(pols))
				for i, p := range pols {
					reqs[i] = limit.Request{Key: keys[i], Policy: p, Cost: in.cost(p)}
				}
				want = applyAllPure(refs, reqs, now)
				what = fmt.Sprintf("ApplyAll %v", reqs)
			} else {
				i := int(op) % len(pols)
				reqs = []limit.Request{{Key: keys[i], Policy: pols[i], Cost: in.cost(pols[i])}}
				want = refs[i].decide(now, reqs[0].Cost)
				what = fmt.Sprintf("Apply %v cost %d", pols[i], reqs[0].Cost)
			}
			if want.Remaining < 0 || want.RetryAfter < 0 || want.ResetAfter < 0 || want.NextUnitAfter < 0 || want.Delay < 0 {
				t.Fatalf("step %d, %s: a negative figure: %+v", step, what, want)
			}
			for _, st := range stores {
				if st.name == "memory" && (back || forced) {
					continue // its state has parted from package limit's
				}
				var got limit.Decision
				if len(reqs) == 1 {
					got, err = st.s.Apply(ctx, reqs[0].Key, reqs[0].Policy, reqs[0].Cost)
				} else {
					got, err = st.s.ApplyAll(ctx, reqs)
				}
				if err != nil {
					t.Fatalf("step %d, %s: %s: %v", step, what, st.name, err)
				}
				if st.name == "redis+cache" && back {
					continue // charged alike, but the figures may differ
				}
				agree := got.Index == want.Index && (len(reqs) == 1 || got.Policy == want.Policy)
				if st.s == limit.Store(mem) {
					g, w := got, want
					g.Policy, w.Policy = nil, nil
					agree = agree && g == w
				} else {
					agree = agree && same(got, want)
				}
				if !agree {
					t.Fatalf("step %d at +%v, %s: %s disagrees with package limit:\n got  %+v\n want %+v",
						step, time.Duration(now-limittest.Base), what, st.name, got, want)
				}
			}
		}
	})
}

// syncAgrees charges cost to key through Sync on each store, as the
// eventual tier does (unconditionally), and checks the state each reads
// back against the charge made by package limit: a policy of the same
// rate or window with a capacity no charge reaches admits anything, and
// computes the state every Sync must leave. ref takes that state.
func syncAgrees(t *testing.T, step int, stores []*Store, ref *reference, key string, p limit.Stateful, cost, now int64) {
	t.Helper()
	const huge = 1 << 40
	var unbounded limit.Stateful
	switch p := p.(type) {
	case limit.TokenBucket:
		unbounded = limit.TokenBucket{Rate: p.Rate, Burst: huge}
	case limit.LeakyBucket:
		unbounded = limit.LeakyBucket{Rate: p.Rate, Burst: huge, Mode: limit.Police}
	case limit.FixedWindow:
		unbounded = limit.FixedWindow{Limit: huge, Window: p.Window}
	case limit.SlidingWindow:
		unbounded = limit.SlidingWindow{Limit: huge, Window: p.Window}
	default:
		t.Fatalf("no unbounded form of %v", p)
	}
	want, _ := unbounded.Decide(ref.st, now, cost)
	for i, s := range stores {
		charges := []Charge{{Key: key, Policy: p, Cost: cost}}
		if err := s.Sync(context.Background(), charges); err != nil {
			t.Fatalf("step %d: store %d: Sync %v cost %d: %v", step, i, p, cost, err)
		}
		if got := charges[0].State; got != want && !(got.IsIdle(now) && want.IsIdle(now)) {
			t.Fatalf("step %d at +%v: store %d: Sync %v cost %d on %+v: state %+v, want %+v",
				step, time.Duration(now-limittest.Base), i, p, cost, ref.st, got, want)
		}
	}
	ref.st = want
}

// applyAllPure is Store.ApplyAll on the pure algorithms: every request
// decided, charged only if all allow, the most restrictive reported.
func applyAllPure(refs []*reference, reqs []limit.Request, now int64) limit.Decision {
	var out limit.Decision
	next := make([]limit.State, len(refs))
	charged := make([]bool, len(refs))
	all := true
	for i, r := range refs {
		var d limit.Decision
		switch p := r.p.(type) {
		case limit.Stateful:
			next[i], d = p.Decide(r.st, now, reqs[i].Cost)
		case limit.Logged:
			d = p.DecideLog(&r.log, now, reqs[i].Cost)
			charged[i] = d.Allowed && reqs[i].Cost > 0
		}
		all = all && d.Allowed
		d.Policy, d.Index = r.p, i
		if i == 0 {
			out = d
		} else {
			out = limit.Merge(out, d)
		}
	}
	for i, r := range refs {
		if _, ok := r.p.(limit.Stateful); ok && all {
			r.st = next[i]
		} else if charged[i] && !all {
			r.log.Rollback()
		}
	}
	return out
}

// fuzzInput reads a fuzz input as policies and steps; past its end it
// reads zeros.
type fuzzInput struct {
	b []byte
	i int
}

func (in *fuzzInput) done() bool { return in.i >= len(in.b) }

func (in *fuzzInput) byte() byte {
	if in.i >= len(in.b) {
		return 0
	}
	in.i++
	return in.b[in.i-1]
}

func (in *fuzzInput) u16() int64 { return int64(in.byte())<<8 | int64(in.byte()) }

// policies reads one to three valid policies, every length a whole number
// of microseconds (the Redis store's resolution): windows from 50µs to
// about 3.3s, emission intervals from 1µs to about 65ms.
func (in *fuzzInput) policies() []limit.Policy {
	n := 1 + int(in.byte()%3)
	var out []limit.Policy
	for range n {
		alg := in.byte() % 5
		size := 1 + int64(in.byte()%20)
		window := time.Duration(1+in.u16()) * 50 * time.Microsecond
		interval := time.Duration(1+in.u16()) * time.Microsecond
		burst := int64(in.byte() % 12)
		var p limit.Policy
		switch alg {
		case 0:
			p = limit.FixedWindow{Limit: size, Window: window}
		case 1:
			p = limit.SlidingLog{Limit: size, Window: window}
		case 2:
			p = limit.SlidingWindow{Limit: size, Window: window}
		case 3:
			p = limit.TokenBucket{Rate: limit.Per(size, time.Duration(size)*interval), Burst: burst}
		default:
			mode := limit.LeakMode(burst % 2)
			burst /= 2
			p = limit.LeakyBucket{Rate: limit.Per(size, time.Duration(size)*interval), Burst: burst, Mode: mode, Delay: size % (burst + 1)}
		}
		if p.Validate() != nil {
			continue
		}
		out = append(out, p)
	}
	return out
}

// step reads a clock step in whole microseconds: none, small, large, or
// (one in sixteen) back by up to 65ms.
func (in *fuzzInput) step() int64 {
	b := in.byte()
	us := int64(time.Microsecond)
	switch b % 16 {
	case 0, 1, 2, 3:
		return 0
	case 4:
		return -in.u16() * us
	case 5, 6, 7, 8, 9:
		return int64(in.byte()) * 10 * us
	case 10, 11, 12, 13:
		return in.u16() * 10 * us
	default:
		return in.u16() * us * 100
	}
}

// cost reads a cost, mostly small, sometimes up to two above p's capacity.
func (in *fuzzInput) cost(p limit.Policy) int64 {
	b := in.byte()
	if b&0x80 != 0 {
		return int64(b&0x7f) % (p.Quota().Limit + 3)
	}
	return int64(b % 4)
}

// differentialSeeds are inputs for FuzzStoresAgree (the committed corpus
// in testdata/fuzz/FuzzStoresAgree holds more): each of the five
// algorithms alone, then all three slots with mixed steps.
var differentialSeeds = [][]byte{
	{0, 0, 3, 0, 40, 0, 9, 2, 5, 3, 0, 1, 0, 1, 5, 100, 1, 0, 2, 12, 0, 3, 4, 0, 9, 0, 0x85, 5, 50, 1},
	{0, 1, 2, 0, 40, 0, 9, 2, 5, 3, 0, 1, 0, 1, 5, 100, 1, 0, 2, 12, 0, 3, 4, 0, 9, 0, 0x85, 5, 50, 1},
	{0, 2, 5, 0, 40, 0, 9, 2, 5, 3, 0, 2, 0, 1, 5, 100, 1, 0, 2, 12, 0, 3, 4, 0, 9, 0, 0x86, 5, 50, 1},
	{0, 3, 3, 0, 40, 0, 200, 4, 0, 3, 0, 1, 0, 1, 5, 100, 1, 0, 2, 12, 0, 3, 4, 0, 9, 0, 0x85, 5, 50, 1},
	{0, 4, 3, 0, 40, 0, 200, 9, 0, 3, 0, 1, 0, 1, 5, 100, 1, 0, 2, 12, 0, 3, 4, 0, 9, 0, 0x85, 5, 50, 1},
	{2, 0, 3, 1, 0, 0, 0, 0, 3, 3, 0, 20, 3, 0, 4, 2, 0, 1, 0, 0, 5,
		0, 0, 1, 1, 1, 4, 4, 2, 2, 2, 5, 200, 0, 1, 2, 3, 0, 0, 3, 3, 3, 14, 0, 10, 0, 0, 0, 0, 0x84, 0x83, 0x85},
}
