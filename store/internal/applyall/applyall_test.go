package applyall

import (
	"errors"
	"hash/maphash"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// counts is a table of plain counters, each key's limit its policy's
// FixedWindow.Limit: the least a Table can be.
type counts struct {
	seed   maphash.Seed
	shards [4]struct {
		mu sync.Mutex
		m  map[string]int64
	}
	notReady error
	locked   atomic.Int64 // Mutex calls
}

func newCounts() *counts {
	c := &counts{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = make(map[string]int64)
	}
	return c
}

func (c *counts) Check(r limit.Request) (int64, int, error) {
	fw, ok := r.Policy.(limit.FixedWindow)
	if !ok {
		return 0, 0, limit.ErrInvalidPolicy
	}
	return fw.Limit, int(maphash.String(c.seed, r.Key) % uint64(len(c.shards))), nil
}

func (c *counts) Ready() error { return c.notReady }

func (c *counts) Mutex(i int) *sync.Mutex { c.locked.Add(1); return &c.shards[i].mu }

func (c *counts) Now() int64 { return 0 }

func (c *counts) View(key string, i int, _ int64, _ int64) int64 { return c.shards[i].m[key] }

func (c *counts) Decide(_ string, _ int, lim int64, v int64, _, cost int64) (int64, limit.Decision) {
	if v+cost > lim {
		return v, limit.Decision{Allowed: false, Limit: lim, Remaining: lim - v}
	}
	return v + cost, limit.Decision{Allowed: true, Limit: lim, Remaining: lim - v - cost}
}

func (c *counts) Commit(key string, i int, v int64, _ int64) { c.shards[i].m[key] = v }

func (c *counts) get(key string) int64 {
	_, i, _ := c.Check(limit.Request{Key: key, Policy: limit.FixedWindow{}})
	return c.shards[i].m[key]
}

func req(key string, lim, cost int64) limit.Request {
	return limit.Request{Key: key, Policy: limit.FixedWindow{Limit: lim, Window: time.Second}, Cost: cost}
}

func TestAllOrNothing(t *testing.T) {
	c := newCounts()
	batch := []limit.Request{req("big", 10, 1), req("small", 1, 1)}
	if d, err := Apply(c, batch); err != nil || !d.Allowed || d.Index != 1 || d.Remaining != 0 {
		t.Fatalf("first batch: %+v %v; want allowed, index 1 the most restrictive", d, err)
	}
	d, err := Apply(c, batch)
	if err != nil || d.Allowed || d.Index != 1 {
		t.Fatalf("second batch: %+v %v; want refused by index 1", d, err)
	}
	if got := c.get("big"); got != 1 {
		t.Fatalf("big charged %d after a refused batch; want 1", got)
	}
}

// A key named twice sees its first charge, and is committed once with both.
func TestAKeyNamedTwice(t *testing.T) {
	c := newCounts()
	if d, _ := Apply(c, []limit.Request{req("k", 2, 1), req("k", 2, 2)}); d.Allowed {
		t.Fatalf("1+2 over a limit of 2 allowed: %+v", d)
	}
	if got := c.get("k"); got != 0 {
		t.Fatalf("k charged %d by a refused batch", got)
	}
	if d, _ := Apply(c, []limit.Request{req("k", 3, 1), req("k", 3, 2)}); !d.Allowed {
		t.Fatalf("1+2 under a limit of 3 refused: %+v", d)
	}
	if got := c.get("k"); got != 3 {
		t.Fatalf("k holds %d; want 3", got)
	}
}

// A refusal to decide is returned before any lock is taken and charges
// nothing.
func TestErrorsComeBeforeTheLocks(t *testing.T) {
	c := newCounts()
	ok := req("a", 5, 1)
	for _, tc := range []struct {
		name     string
		reqs     []limit.Request
		notReady error
		want     error
	}{
		{"negative cost", []limit.Request{ok, req("b", 5, -1)}, nil, limit.ErrNegativeCost},
		{"check", []limit.Request{ok, {Key: "b", Policy: limit.TokenBucket{}, Cost: 1}}, nil, limit.ErrInvalidPolicy},
		{"not ready", []limit.Request{ok}, errors.New("cold"), nil},
	} {
		c.notReady = tc.notReady
		c.locked.Store(0)
		want := tc.want
		if want == nil {
			want = tc.notReady
		}
		if _, err := Apply(c, tc.reqs); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", tc.name, err, want)
		}
		if n := c.locked.Load(); n != 0 || c.get("a") != 0 {
			t.Errorf("%s: %d locks taken, a charged %d", tc.name, n, c.get("a"))
		}
	}
	c.notReady = nil
	if d, err := Apply(c, nil); err != nil || !d.Allowed {
		t.Errorf("empty batch: %+v %v", d, err)
	}
}

// Batches naming the same keys in opposite orders, at once: the locks are
// taken in shard order, so they cannot deadlock, and every charge is
// counted once.
func TestConcurrentBatches(t *testing.T) {
	c := newCounts()
	var keys []limit.Request
	for i := range 8 {
		keys = append(keys, req("k"+strconv.Itoa(i), 1<<40, 1))
	}
	rev := make([]limit.Request, len(keys))
	for i := range keys {
		rev[i] = keys[len(keys)-1-i]
	}
	const rounds = 500
	var wg sync.WaitGroup
	for _, b := range [][]limit.Request{keys, rev, keys, rev} {
		wg.Go(func() {
			for range rounds {
				if d, err := Apply(c, b); err != nil || !d.Allowed {
					t.Errorf("%+v %v", d, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, r := range keys {
		if got := c.get(r.Key); got != 4*rounds {
			t.Errorf("%s: %d, want %d", r.Key, got, 4*rounds)
		}
	}
}

func TestApplyAllocatesNothing(t *testing.T) {
	c := newCounts()
	var batch []limit.Request
	for i := range OnStack {
		batch = append(batch, req("k"+strconv.Itoa(i%5), 1<<40, 1))
	}
	Apply(c, batch)
	if n := testing.AllocsPerRun(200, func() { Apply(c, batch) }); n != 0 {
		t.Fatalf("%v allocations per batch of %d", n, OnStack)
	}
}
