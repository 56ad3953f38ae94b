package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
	"github.com/tollgate-dev/tollgate/limit"
)

// Charge is one key's update for Sync: Cost units admitted elsewhere (by a
// node deciding locally) to add to Key under Policy, and, after Sync, the
// key's global State.
type Charge struct {
	Key    string
	Policy limit.Stateful
	// Cost is added unconditionally: the requests were already admitted.
	// Zero only reads the state.
	Cost int64
	// State is set by Sync: the key's state after the charge, in Unix ns
	// like limit.State (the zero State for an absent key).
	State limit.State
}

// ErrSlidingLog reports a sliding log given to Sync: its state is a log,
// not a limit.State, so it has no eventual tier.
var ErrSlidingLog = errors.New("redis: the sliding log has no fixed-size state to sync")

// Sync adds each charge's cost to its key unconditionally and reads back
// each key's state, in pipelined script calls (one per key, one round trip
// per algorithm present). It is how the eventual tier pushes the deltas a
// node admitted locally and pulls the global view. A failure leaves the
// charges unapplied or partly applied and is returned as an error; Sync
// bypasses the breaker, the over-limit cache and the failure modes.
func (s *Store) Sync(ctx context.Context, charges []Charge) error {
	groups := map[limit.Algorithm][]int{}
	execs := map[limit.Algorithm][]rueidis.LuaExec{}
	for i, c := range charges {
		if c.Cost < 0 {
			return limit.ErrNegativeCost
		}
		a, err := s.enc.get(c.Policy)
		if err != nil {
			return err
		}
		if a.alg == limit.AlgSlidingLog {
			return ErrSlidingLog
		}
		groups[a.alg] = append(groups[a.alg], i)
		execs[a.alg] = append(execs[a.alg], rueidis.LuaExec{
			Keys: []string{s.redisKey(c.Key)},
			Args: []string{s.clockArg(), s.floorMS, strconv.FormatInt(c.Cost, 10), "1", a.strs[0], a.strs[1], a.strs[2], a.strs[3]},
		})
	}
	var errs []error
	for alg, ex := range execs {
		res := s.scripts.one[alg].ExecMulti(ctx, s.client, ex...)
		for j, r := range res {
			v, err := r.AsIntSlice()
			if err == nil && len(v) < 10 {
				err = fmt.Errorf("script returned %d values, want 10", len(v))
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			c := &charges[groups[alg][j]]
			c.State = fromWire(alg, v[6], v[7], v[8])
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("redis: sync: %w", errors.Join(errs...))
	}
	return nil
}

// fromWire converts a script's state (µs) to limit.State (ns): the fields
// that hold instants or durations are scaled, counts and window indexes
// are not.
func fromWire(alg limit.Algorithm, a, b, idle int64) limit.State {
	if idle == 0 {
		return limit.State{}
	}
	const us = 1000
	switch alg {
	case limit.AlgTokenBucket:
		return limit.State{A: a * us, Idle: idle * us}
	case limit.AlgLeakyBucket:
		return limit.State{A: a * us, B: b * us, Idle: idle * us}
	}
	return limit.State{A: a, B: b, Idle: idle * us} // fixed_window, sliding_window
}
