package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/limit"
)

// Batching. Redis runs one script at a time, and a script call's own cost
// (reading the command, setting up KEYS and ARGV, the reply) is most of
// what a token-bucket decision costs it. So a token-bucket Apply on a
// standalone Redis joins the open batch: while batchCalls calls are in
// flight, the decisions that arrive wait together, and the first of them
// (the batch's leader) sends them all in one call of token_bucket_many.lua
// as soon as one of the calls in flight returns. The script decides them
// one after another, each saved before the next, as separate Applys would
// be, at one instant (the server's TIME, read once). A lone caller finds a
// call slot free and sends its decision at once: batching adds no wait.
const (
	// batchCalls is how many batch calls may be in flight at once: enough
	// to keep Redis busy while the replies of the others travel back.
	batchCalls = 4
	// batchMax bounds the decisions in one call (and so the time one call
	// holds Redis: about a µs each).
	batchMax = 64
)

// batcher gathers concurrent token-bucket decisions into batches.
type batcher struct {
	mu       sync.Mutex
	slot     sync.Cond // on mu (New sets L): signalled when a call in flight returns
	inflight int       // batch calls in flight
	open     *batch    // the batch decisions join, nil when none is
	pool     sync.Pool // *batch
}

// batch is one script call's decisions.
type batch struct {
	keys []string // Redis keys, one per decision
	argv []string // now, TTL floor, then cost, interval, burst per decision
	vals []int64  // the reply, once done
	err  error    // the call's error, once done
	done sync.WaitGroup
	refs atomic.Int32 // decisions still to read the reply
}

// errSkipped is the error of a batch not sent: the breaker opened while
// it waited for a call slot.
var errSkipped = errors.New("redis: batch not sent: the circuit breaker opened")

// errNotState reports a key that holds something else than a token
// bucket's state (the batch script's allowed value -1).
type errNotState struct{ key string }

func (e errNotState) Error() string {
	return "tollgate: key " + e.key + " holds no token bucket state"
}

// join adds a decision (its Redis key, cost and policy) to the open batch,
// or opens one, and returns once the batch's call has returned, with the
// decision's index in it. The caller reads the batch's reply and then
// releases it.
func (s *Store) join(c *conn, rkey, cost string, a args) (*batch, int) {
	bt := &s.batch
	bt.mu.Lock()
	b := bt.open
	leader := b == nil
	if leader {
		if b, _ = bt.pool.Get().(*batch); b == nil {
			b = &batch{keys: make([]string, 0, batchMax), argv: make([]string, 0, 2+3*batchMax)}
		}
		b.argv = append(b.argv, "", s.floorMS) // now: when it is sent
		b.done.Add(1)
		bt.open = b
	}
	i := len(b.keys)
	b.keys = append(b.keys, rkey)
	b.argv = append(b.argv, cost, a.strs[0], a.strs[1])
	b.refs.Add(1)
	if len(b.keys) == batchMax {
		bt.open = nil // full: the next decision opens another
	}
	if !leader {
		bt.mu.Unlock()
		b.done.Wait()
		return b, i
	}
	for bt.inflight >= batchCalls {
		bt.slot.Wait()
	}
	if bt.open == b {
		bt.open = nil
	}
	if !s.breaker.closed() {
		// The breaker opened while b waited: its decisions follow the
		// failure mode now, as they would have had they come now.
		bt.mu.Unlock()
		b.err = errSkipped
		b.done.Done()
		return b, i
	}
	bt.inflight++
	bt.mu.Unlock()
	s.send(c, b)
	bt.mu.Lock()
	bt.inflight--
	bt.slot.Signal()
	bt.mu.Unlock()
	b.done.Done()
	return b, i
}

// send makes b's call, under the store's timeout (not a caller's: the
// call is every waiting decision's).
func (s *Store) send(c *conn, b *batch) {
	b.argv[0] = s.clockArg()
	cctx, cancel := s.deadline.with(context.Background())
	vals, err := s.scripts.many.Exec(cctx, c.client, b.keys, b.argv).AsIntSlice()
	for try := 1; try < maxTries && othersDeadline(cctx, err); try++ {
		vals, err = s.scripts.many.Exec(cctx, c.client, b.keys, b.argv).AsIntSlice()
	}
	cancel()
	if err == nil && len(vals) < width*len(b.keys)+1 {
		err = errShortReply{fmt.Errorf("script returned %d values, want %d", len(vals), width*len(b.keys)+1)}
	}
	b.vals, b.err = vals, err
}

// release is a decision's end of reading b: the last one returns it to
// the pool.
func (bt *batcher) release(b *batch) {
	if b.refs.Add(-1) != 0 {
		return
	}
	clear(b.keys)
	clear(b.argv)
	b.keys, b.argv, b.vals, b.err = b.keys[:0], b.argv[:0], nil, nil
	bt.pool.Put(b)
}

// applyBatched is apply's call to Redis for a token bucket on a
// standalone Redis: one decision of a batch.
func (s *Store) applyBatched(ctx context.Context, c *conn, key string, p limit.Policy, cost int64, a args, mode failmode.Mode, now int64, epoch uint64) (limit.Decision, error) {
	rkey := s.redisKey(key)
	b, i := s.join(c, rkey, costArg(cost, a), a)
	var v [width + 1]int64
	err := b.err
	if err == nil {
		copy(v[:width], b.vals[width*i:])
		v[width] = b.vals[len(b.vals)-1]
	}
	s.batch.release(b)
	if err == nil && v[0] < 0 {
		err = errNotState{rkey}
	}
	if err == errSkipped {
		s.shortCircuit()
		return s.fail(ctx, mode, []limit.Request{{Key: key, Policy: p, Cost: cost}})
	}
	if err != nil {
		return s.failedCall(ctx, err, mode, []limit.Request{{Key: key, Policy: p, Cost: cost}})
	}
	return s.decided(key, p, cost, a, v[:], now, epoch), nil
}
