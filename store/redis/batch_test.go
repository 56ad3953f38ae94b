package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
)

// scriptCalls is the number of script calls (EVALSHA and EVAL) srv has
// run since its statistics were last reset.
func scriptCalls(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(srv.CLI(t, "INFO", "commandstats"), "\n") {
		if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
			continue
		}
		v, _, _ := strings.Cut(strings.TrimPrefix(line[strings.IndexByte(line, ':')+1:], "calls="), ",")
		c, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("INFO commandstats: %q: %v", line, err)
		}
		n += c
	}
	return n
}

// contend has 64 callers make 50 decisions each on 8 keys under p, at one
// instant (the clock injected), and returns every decision by key.
func contend(t *testing.T, s *Store, p limit.Policy) map[string][]limit.Decision {
	t.Helper()
	const callers, each, keys = 64, 50, 8
	var (
		mu  sync.Mutex
		out = map[string][]limit.Decision{}
		wg  sync.WaitGroup
	)
	errs := make(chan error, callers)
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := "k" + strconv.Itoa((g+i)%keys)
				d, err := s.Apply(context.Background(), key, p, 1)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				out[key] = append(out[key], d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return out
}

// TestContendedTokenBucketsAreExact: 64 callers on 8 token buckets of
// burst 100 at one instant (3,200 decisions, 400 a key): each key admits
// exactly 100, reporting each Remaining from 99 down to 0 once (every
// admission saw the one before it), and refuses the rest with package
// limit's figures; no decision fell to the failure mode.
func TestContendedTokenBucketsAreExact(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }, CacheSize: -1})
	p := limit.TokenBucket{Rate: limit.Per(1, time.Hour), Burst: 100}
	var st limit.State
	want := make([]limit.Decision, 101)
	for i := range want {
		st, want[i] = p.Decide(st, now, 1)
	}
	for key, ds := range contend(t, s, p) {
		seen := make([]int, 100)
		for _, d := range ds {
			if !d.Allowed {
				if !same(d, want[100]) {
					t.Fatalf("%s: refusal %+v, want %+v", key, d, want[100])
				}
				continue
			}
			if d.Remaining < 0 || d.Remaining > 99 || !same(d, want[99-d.Remaining]) {
				t.Fatalf("%s: admission %+v, want one of package limit's", key, d)
			}
			seen[d.Remaining]++
		}
		for r, n := range seen {
			if n != 1 {
				t.Fatalf("%s: Remaining %d reported by %d admissions, want 1", key, r, n)
			}
		}
	}
	if st := s.Stats(); st.Failures != 0 || st.ReplyErrors != 0 || st.Decisions != 3200 {
		t.Fatalf("stats: %+v", st)
	}
}

// TestContendedDecisionsShareScriptCalls: the 3,200 decisions of 64
// contending callers take far fewer script calls than decisions (the
// decisions waiting while calls are in flight go in one call), which is
// what Redis's CPU per decision comes down to. Before batching it was one
// call a decision.
func TestContendedDecisionsShareScriptCalls(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }, CacheSize: -1})
	srv.CLI(t, "CONFIG", "RESETSTAT")
	contend(t, s, limit.TokenBucket{Rate: limit.Per(1, time.Hour), Burst: 100})
	// 64 callers and batchCalls calls in flight: all but a few callers wait
	// in the open batch whenever the slots are taken.
	if n := scriptCalls(t, srv); n > 3200/4 {
		t.Fatalf("%d script calls for 3,200 decisions, want at most 800", n)
	}
}

// held decides reqs (token buckets) as one batch: the call slots are held
// taken while they join it, then freed. It returns their decisions and
// errors in the order of reqs.
func held(t *testing.T, s *Store, mode failmode.Mode, reqs []limit.Request) ([]limit.Decision, []error) {
	t.Helper()
	return heldThen(t, s, mode, reqs, func() {})
}

// heldThen is held, calling then once every request has joined, before
// the slots are freed.
func heldThen(t *testing.T, s *Store, mode failmode.Mode, reqs []limit.Request, then func()) ([]limit.Decision, []error) {
	t.Helper()
	bt := &s.batch
	bt.mu.Lock()
	bt.inflight = batchCalls
	bt.mu.Unlock()
	out, errs := make([]limit.Decision, len(reqs)), make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = s.WithFailure(mode).Apply(context.Background(), r.Key, r.Policy, r.Cost)
		}()
	}
	// Wait for every request to join (readiness, polled: the joiners
	// block inside the store).
	for joined := 0; joined < len(reqs); {
		bt.mu.Lock()
		joined = 0
		if bt.open != nil {
			joined = len(bt.open.keys)
		}
		bt.mu.Unlock()
		if joined < len(reqs) {
			time.Sleep(100 * time.Microsecond)
		}
	}
	then()
	bt.mu.Lock()
	bt.inflight = 0
	bt.slot.Broadcast()
	bt.mu.Unlock()
	wg.Wait()
	return out, errs
}

// TestOneBatch decides, in one script call, five requests on one key of
// burst 3, requests of cost 0 and of cost above the burst, a key of
// another policy, and two keys holding something else (a string, a list).
// Each decision is package limit's for the requests before it on its key;
// the foreign keys follow the failure mode without failing the others.
func TestOneBatch(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }, CacheSize: -1})
	srv.CLI(t, "SET", "tollgate:{garbage}", "x")
	srv.CLI(t, "RPUSH", "tollgate:{list}", "x")
	p := limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 3}
	q := limit.TokenBucket{Rate: limit.Per(5, time.Minute), Burst: 20}
	var reqs []limit.Request
	for range 5 {
		reqs = append(reqs, limit.Request{Key: "same", Policy: p, Cost: 1})
	}
	reqs = append(reqs,
		limit.Request{Key: "peek", Policy: p, Cost: 0},
		limit.Request{Key: "big", Policy: p, Cost: 4},
		limit.Request{Key: "other", Policy: q, Cost: 5},
		limit.Request{Key: "garbage", Policy: p, Cost: 1},
		limit.Request{Key: "list", Policy: p, Cost: 1})
	if _, err := s.Apply(context.Background(), "warm", p, 1); err != nil { // the script cached: EVALSHA only
		t.Fatal(err)
	}
	srv.CLI(t, "CONFIG", "RESETSTAT")
	got, errs := held(t, s, failmode.Closed, reqs)
	if n := scriptCalls(t, srv); n != 1 {
		t.Fatalf("%d script calls for one batch, want 1", n)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	// The five on one key: the first five decisions of package limit, in
	// some order (all at one instant, of one cost).
	var st limit.State
	var want []string
	for range 5 {
		var d limit.Decision
		st, d = p.Decide(st, now, 1)
		want = append(want, fmt.Sprintf("%+v", d))
	}
	for _, d := range got[:5] {
		d.Policy = nil
		k := fmt.Sprintf("%+v", d)
		found := false
		for j, w := range want {
			if w == k {
				want = append(want[:j], want[j+1:]...)
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("a decision on the shared key is none of package limit's left: %s, left %v", k, want)
		}
	}
	for i, r := range reqs[5:8] {
		_, w := r.Policy.(limit.Stateful).Decide(limit.State{}, now, r.Cost)
		if !same(got[5+i], w) {
			t.Fatalf("%s: %+v, want %+v", r.Key, got[5+i], w)
		}
	}
	for i, r := range reqs[8:] {
		if d := got[8+i]; d.Allowed {
			t.Fatalf("%s (no token bucket state) allowed under fail closed: %+v", r.Key, d)
		}
	}
	if st := s.Stats(); st.ReplyErrors != 2 || st.FailClosed != 2 || st.Decisions != 1+8 || st.Failures != 0 {
		t.Fatalf("stats: %+v", st)
	}
}

// TestBatchWaitingWhenTheBreakerOpensIsNotSent: decisions waiting for a
// call slot when the breaker opens follow the failure mode at once,
// without a call, as decisions arriving then would (they would otherwise
// wait for a call to a Redis just found failing).
func TestBatchWaitingWhenTheBreakerOpensIsNotSent(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }, CacheSize: -1, BreakerFailures: 3, BreakerCooldown: time.Hour})
	p := limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 10}
	if _, err := s.Apply(context.Background(), "warm", p, 1); err != nil {
		t.Fatal(err)
	}
	srv.CLI(t, "CONFIG", "RESETSTAT")
	reqs := make([]limit.Request, 5)
	for i := range reqs {
		reqs[i] = limit.Request{Key: "k" + strconv.Itoa(i), Policy: p, Cost: 1}
	}
	got, errs := heldThen(t, s, failmode.Closed, reqs, func() {
		for range 3 {
			s.breaker.done(false)
		}
	})
	for i, d := range got {
		if errs[i] != nil || d.Allowed {
			t.Fatalf("request %d with the breaker open, fail closed: %+v, %v", i, d, errs[i])
		}
	}
	if n := scriptCalls(t, srv); n != 0 {
		t.Fatalf("%d script calls with the breaker open, want 0", n)
	}
	if st := s.Stats(); st.FailClosed != 5 || st.ShortCircuits != 5 || st.Failures != 0 {
		t.Fatalf("stats: %+v", st)
	}
}
