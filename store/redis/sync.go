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
// key's global State or the reason the charge failed.
type Charge struct {
	Key    string
	Policy limit.Stateful
	// Cost is added unconditionally: the requests were already admitted.
	// Zero only reads the state.
	Cost int64
	// State is set by Sync: the key's state after the charge, in Unix ns
	// like limit.State (the zero State for an absent key, or when Err is
	// set).
	State limit.State
	// Now is set by Sync: the instant, in Unix ns, at which Redis applied
	// the charge, by the clock the scripts read (the server's TIME, or
	// Config.Clock). The eventual tier measures its clock's skew by it.
	Now int64
	// Err is set by Sync: nil when Redis applied the charge and State was
	// read back; otherwise why it failed. A failed charge was not applied,
	// unless the failure is a timeout or a lost connection: then Redis may
	// have applied it without the answer arriving.
	Err error
}

// ErrSlidingLog reports a sliding log given to Sync: its state is a log,
// not a limit.State, so it has no eventual tier.
var ErrSlidingLog = errors.New("redis: the sliding log has no fixed-size state to sync")

// Sync adds each charge's cost to its key unconditionally and reads back
// each key's state, in pipelined script calls (one per key, one round trip
// per algorithm present). It is how the eventual tier pushes the deltas a
// node admitted locally and pulls the global view.
//
// Each charge succeeds or fails on its own, and Sync reports which in its
// Err field: a charge that is invalid (a negative cost, an invalid policy,
// a sliding log) or that Redis refuses (a key holding another type) fails
// without keeping the others from being applied. Sync returns nil when
// every charge succeeded, and otherwise an error joining the failed
// charges' errors. Sync bypasses the breaker and the failure modes, and
// makes the over-limit cache forget the keys it charges.
func (s *Store) Sync(ctx context.Context, charges []Charge) error {
	groups := map[limit.Algorithm][]int{}
	execs := map[limit.Algorithm][]rueidis.LuaExec{}
	for i := range charges {
		c := &charges[i]
		c.State, c.Now, c.Err = limit.State{}, 0, nil
		a, err := s.enc.get(c.Policy)
		switch {
		case c.Cost < 0:
			c.Err = limit.ErrNegativeCost
		case err != nil:
			c.Err = err
		case a.alg == limit.AlgSlidingLog:
			c.Err = ErrSlidingLog
		}
		if c.Err != nil {
			continue
		}
		if s.cache != nil && c.Cost > 0 {
			s.cache.forget(c.Key, c.Policy) // the charge changes the key
		}
		groups[a.alg] = append(groups[a.alg], i)
		execs[a.alg] = append(execs[a.alg], rueidis.LuaExec{
			Keys: []string{s.redisKey(c.Key)},
			Args: []string{s.clockArg(), s.floorMS, strconv.FormatInt(c.Cost, 10), "1", a.strs[0], a.strs[1], a.strs[2], a.strs[3]},
		})
	}
	client, cerr := s.client()
	for alg, ex := range execs {
		if cerr != nil {
			for _, i := range groups[alg] {
				charges[i].Err = cerr
			}
			continue
		}
		res := s.scripts.one[alg].ExecMulti(ctx, client, ex...)
		for j, r := range res {
			c := &charges[groups[alg][j]]
			v, err := r.AsIntSlice()
			if err == nil && len(v) < width+4 {
				err = fmt.Errorf("script returned %d values, want %d", len(v), width+4)
			}
			if err != nil {
				c.Err = err
				continue
			}
			c.State, c.Now = fromWire(alg, v[width], v[width+1], v[width+2]), v[width+3]*1000
		}
	}
	var errs []error
	for i := range charges {
		if c := &charges[i]; c.Err != nil {
			errs = append(errs, s.keyError(c.Key, c.Err))
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
