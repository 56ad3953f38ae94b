package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// Plain counters: envoyproxy/ratelimit's own use of Redis, an integer per
// key and window incremented with INCRBY and given a time to live with
// EXPIRE, both pipelined, no script. They serve package envoyrls, whose
// keys are envoyproxy/ratelimit's ("domain_key_value_..._window"), so that
// the two can share (and hand over) the counts in one Redis.
//
// Unlike Apply, these calls have no failure mode: every failure (not
// connected, a timeout after Config.Timeout, an error reply) is the
// caller's error, as envoyproxy/ratelimit's Redis errors are its callers'.
// The breaker is neither consulted nor charged: each call waits for Redis
// up to the timeout.

// errCounterArgs reports slices of different lengths.
var errCounterArgs = errors.New("redis: IncrExpire: keys, hits, ttl and out differ in length")

// cmdPool holds the command slices of the calls.
var cmdPool = sync.Pool{New: func() any { c := make(rueidis.Commands, 0, 8); return &c }}

// IncrExpire adds hits[i] to the integer at keys[i] (INCRBY) and sets
// its time to live to ttl[i] seconds (EXPIRE), for every i, in one
// pipelined round trip, and writes each count after its increment to
// out[i]. keys are Redis keys as given: without Config.Prefix and without
// a hash tag (on a cluster each key is sent to its own slot's node).
func (s *Store) IncrExpire(ctx context.Context, keys []string, hits, ttl, out []int64) error {
	if len(hits) != len(keys) || len(ttl) != len(keys) || len(out) < len(keys) {
		return errCounterArgs
	}
	return s.counterPipeline(ctx, len(keys), func(c rueidis.Client, cmds rueidis.Commands) rueidis.Commands {
		for i, k := range keys {
			cmds = append(cmds, c.B().Incrby().Key(k).Increment(hits[i]).Build(),
				c.B().Expire().Key(k).Seconds(ttl[i]).Build())
		}
		return cmds
	}, func(i int, r rueidis.RedisResult) error {
		if i%2 == 1 {
			return r.Error()
		}
		n, err := r.AsInt64()
		out[i/2] = n
		return err
	})
}

// Counts reads the integers at keys (GET, pipelined) into out; a key
// that does not exist counts 0. ttl is not read: it is there for
// envoyrls.Counters, whose other implementation keeps each counter as a
// window of its time to live.
func (s *Store) Counts(ctx context.Context, keys []string, ttl, out []int64) error {
	if len(out) < len(keys) {
		return errCounterArgs
	}
	return s.counterPipeline(ctx, len(keys), func(c rueidis.Client, cmds rueidis.Commands) rueidis.Commands {
		for _, k := range keys {
			cmds = append(cmds, c.B().Get().Key(k).Build())
		}
		return cmds
	}, func(i int, r rueidis.RedisResult) error {
		n, err := r.AsInt64()
		if rueidis.IsRedisNil(err) {
			n, err = 0, nil
		}
		out[i] = n
		return err
	})
}

// counterPipeline is the calls' one round trip for n keys (none: no
// call): build appends the commands to a pooled slice, counterCall sends
// them and hands each reply to read, and the slice goes back to the pool.
func (s *Store) counterPipeline(ctx context.Context, n int, build func(rueidis.Client, rueidis.Commands) rueidis.Commands, read func(int, rueidis.RedisResult) error) error {
	if n == 0 {
		return nil
	}
	c, err := s.client()
	if err != nil {
		return err
	}
	cp := cmdPool.Get().(*rueidis.Commands)
	cmds := build(c, (*cp)[:0])
	err = s.counterCall(ctx, c, cmds, read)
	clear(cmds)
	*cp = cmds[:0]
	cmdPool.Put(cp)
	return err
}

// counterCtx bounds a call by the timeout without a timer of its own:
// the caller's context when its deadline comes first (Envoy's calls carry
// one of tens of milliseconds: a cancelled call stops waiting), else the
// store's shared deadline, between Timeout and 1.1×Timeout away (a
// caller's earlier cancellation is then not seen: the call still ends
// within the timeout). context.WithTimeout per call cost envoy-rls a
// tenth of its CPU per decision.
func (s *Store) counterCtx(ctx context.Context) context.Context {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= s.cfg.Timeout {
		return ctx
	}
	c, _ := s.deadline.with(context.Background())
	return c
}

// counterCall sends cmds in one pipelined write within the timeout and
// hands each reply to read, returning the first error; failures and
// timeouts are counted in Stats.
func (s *Store) counterCall(ctx context.Context, c rueidis.Client, cmds rueidis.Commands, read func(int, rueidis.RedisResult) error) error {
	res := c.DoMulti(s.counterCtx(ctx), cmds...)
	var first error
	for i, r := range res {
		if err := read(i, r); err != nil && first == nil {
			first = err
		}
	}
	if first == nil {
		s.stats.decisions.Add(1)
		return nil
	}
	if isReply(first) {
		s.stats.replyErrors.Add(1)
	} else if dl, ok := ctx.Deadline(); ctx.Err() == nil && (!ok || time.Now().Before(dl)) {
		// (the client times a call out by ctx's deadline on its own
		// timer, an instant before ctx's: the caller's timeout, not a
		// failure)
		s.stats.failures.Add(1)
		if errors.Is(first, context.DeadlineExceeded) {
			s.stats.timeouts.Add(1)
		}
	}
	s.probeMu.Lock()
	secret := s.secret
	s.probeMu.Unlock()
	return fmt.Errorf("redis: %w", hideSecret(first, secret))
}
