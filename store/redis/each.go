package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/limit"
)

// ApplyEach decides each of reqs on its own, as Apply would, into out,
// with the failure mode of Config.OnFailure, in one round trip: the
// requests the over-limit cache does not answer are decided by one call
// of a script that runs each algorithm in turn (on a cluster, whose keys
// may live on several nodes, by one script call each, sent together in
// one pipelined write per node). A key holding something else than
// tollgate's state fails the whole call, answered by the failure mode.
// It implements limit.EachApplier.
func (s *Store) ApplyEach(ctx context.Context, reqs []limit.Request, out []limit.Decision) error {
	return s.applyEach(ctx, reqs, out, s.cfg.OnFailure)
}

// ApplyEach is Store.ApplyEach with the rule's failure mode.
func (r rule) ApplyEach(ctx context.Context, reqs []limit.Request, out []limit.Decision) error {
	return r.s.applyEach(ctx, reqs, out, r.mode)
}

// eachStack is the batch size ApplyEach decides without allocating its
// bookkeeping (an Envoy request has a few descriptors).
const eachStack = 8

// errShortOut reports an ApplyEach whose out is shorter than its reqs.
var errShortOut = errors.New("redis: ApplyEach: out is shorter than reqs")

func (s *Store) applyEach(ctx context.Context, reqs []limit.Request, out []limit.Decision, mode failmode.Mode) error {
	if len(out) < len(reqs) {
		return errShortOut
	}
	if len(reqs) <= 1 {
		if len(reqs) == 1 {
			d, err := s.apply(ctx, reqs[0].Key, reqs[0].Policy, reqs[0].Cost, mode)
			out[0] = d
			return err
		}
		return nil
	}
	var (
		encBuf     [eachStack]args
		epochBuf   [eachStack]uint64
		pendingBuf [eachStack]int
	)
	enc, epochs, pending := encBuf[:0], epochBuf[:0], pendingBuf[:0]
	if len(reqs) > eachStack {
		enc, epochs, pending = make([]args, 0, len(reqs)), make([]uint64, 0, len(reqs)), make([]int, 0, len(reqs))
	}
	for _, r := range reqs {
		if r.Cost < 0 {
			return limit.ErrNegativeCost
		}
		a, err := s.enc.get(r.Policy)
		if err != nil {
			return err
		}
		enc = append(enc, a)
	}
	var now int64
	if s.cache != nil {
		now = s.now()
	}
	for i, r := range reqs {
		var epoch uint64
		if s.cache != nil {
			d, ep, hit := s.cache.get(r.Key, r.Policy, r.Cost, enc[i].capacity, now)
			// A key sent to Redis earlier in the batch is sent again: the
			// earlier request may admit, which the cache cannot know yet.
			if hit && !pendingKey(reqs, pending, r.Key) {
				s.stats.cacheHits.Add(1)
				d.Policy = r.Policy
				out[i] = d
				epochs = append(epochs, 0)
				continue
			}
			epoch = ep
		}
		epochs = append(epochs, epoch)
		pending = append(pending, i)
	}
	if len(pending) == 0 {
		return nil
	}
	c := s.conn.Load()
	if c == nil || !s.breaker.closed() {
		for _, i := range pending {
			s.shortCircuit()
			d, err := s.fail(ctx, mode, reqs[i:i+1])
			if err != nil {
				return err
			}
			out[i] = d
		}
		return nil
	}
	var (
		valsBuf [eachStack][]int64
		nowsBuf [eachStack]int64
		errsBuf [eachStack]error
	)
	vals, nows, errs := valsBuf[:0], nowsBuf[:0], errsBuf[:0]
	if len(pending) > eachStack {
		vals, nows, errs = make([][]int64, 0, len(pending)), make([]int64, 0, len(pending)), make([]error, 0, len(pending))
	}
	vals, nows, errs = vals[:len(pending)], nows[:len(pending)], errs[:len(pending)]
	if c.cluster {
		s.eachPipelined(ctx, c.client, reqs, enc, pending, vals, nows, errs)
	} else {
		s.eachScript(ctx, c.client, reqs, enc, pending, vals, nows, errs)
	}
	failed := false
	for j, i := range pending {
		r := reqs[i]
		if err := errs[j]; err != nil {
			var d limit.Decision
			if failed && !c.cluster {
				// The one script call failed: one failure, counted and
				// logged once, answering every request.
				d, err = s.fail(ctx, mode, reqs[i:i+1])
			} else {
				d, err = s.failedCall(ctx, err, mode, reqs[i:i+1])
			}
			failed = true
			if err != nil {
				return err
			}
			out[i] = d
			continue
		}
		s.breaker.done(true)
		s.stats.decisions.Add(1)
		if s.onNow != nil {
			s.onNow(nows[j])
		}
		d := decode(vals[j], enc[i])
		d.Policy = r.Policy
		if s.cache != nil {
			s.cache.record(r.Key, r.Policy, r.Cost, now, epochs[i], d)
		}
		out[i] = d
	}
	return nil
}

// eachScript decides the pending requests in one call of the ApplyEach
// script (a standalone Redis: every key is on it), filling each one's
// decision values, the script's now, or its error: a failed call fails
// every request with the same error.
func (s *Store) eachScript(ctx context.Context, c rueidis.Client, reqs []limit.Request, enc []args, pending []int, vals [][]int64, nows []int64, errs []error) {
	keys := make([]string, 0, len(pending))
	argv := make([]string, 0, 2+6*len(pending))
	argv = append(argv, s.clockArg(), s.floorMS)
	for _, i := range pending {
		a := enc[i]
		keys = append(keys, s.redisKey(reqs[i].Key))
		argv = append(argv, algArg[a.alg], strconv.FormatInt(min(reqs[i].Cost, a.capacity+1), 10),
			a.strs[0], a.strs[1], a.strs[2], a.strs[3])
	}
	cctx, cancel := s.deadline.with(ctx)
	all, err := s.scripts.each.Exec(cctx, c, keys, argv).AsIntSlice()
	cancel()
	if err == nil && len(all) < width*len(pending)+1 {
		err = errShortReply{fmt.Errorf("script returned %d values, want %d", len(all), width*len(pending)+1)}
	}
	for j := range pending {
		if err != nil {
			errs[j] = err
			continue
		}
		vals[j], nows[j] = all[width*j:width*j+width], all[len(all)-1]
	}
}

// eachPipelined decides the pending requests by one script call each,
// sent together in one pipelined write (a cluster: the keys may be in
// different slots, and rueidis sends each node its own).
func (s *Store) eachPipelined(ctx context.Context, c rueidis.Client, reqs []limit.Request, enc []args, pending []int, vals [][]int64, nows []int64, errs []error) {
	clock := s.clockArg()
	cmds := make(rueidis.Commands, 0, len(pending))
	for _, i := range pending {
		a := enc[i]
		cmds = append(cmds, c.B().Evalsha().Sha1(s.scripts.oneSHA[a.alg]).Numkeys(1).Key(s.redisKey(reqs[i].Key)).
			Arg(clock, s.floorMS, strconv.FormatInt(min(reqs[i].Cost, a.capacity+1), 10), "0", a.strs[0], a.strs[1], a.strs[2], a.strs[3]).Build())
	}
	cctx, cancel := s.deadline.with(ctx)
	defer cancel()
	res := c.DoMulti(cctx, cmds...)
	for j, i := range pending {
		// NOSCRIPT (a restart, SCRIPT FLUSH, a failover): this one again,
		// by EVALSHA then EVAL, which caches the script for the next.
		if re, ok := rueidis.IsRedisErr(res[j].Error()); ok && re.IsNoScript() {
			res[j] = s.scripts.one[enc[i].alg].Exec(cctx, c, []string{s.redisKey(reqs[i].Key)}, s.scriptArgs(clock, reqs[i].Cost, enc[i]))
		}
		v, err := res[j].AsIntSlice()
		if err == nil && len(v) < width+1 {
			err = errShortReply{fmt.Errorf("script returned %d values, want %d", len(v), width+1)}
		}
		if err != nil {
			errs[j] = err
			continue
		}
		vals[j], nows[j] = v, v[width]
	}
}

// algArg is each algorithm's number in the batch scripts' ARGV.
var algArg = [...]string{"0", "1", "2", "3", "4", "5"}

// pendingKey reports whether one of reqs named in pending has key.
func pendingKey(reqs []limit.Request, pending []int, key string) bool {
	for _, i := range pending {
		if reqs[i].Key == key {
			return true
		}
	}
	return false
}

// scriptArgs are a one-request script's ARGV for a charge of cost under
// a: now, the TTL floor, the cost (capped above the capacity), no force,
// and the policy's four parameters.
func (s *Store) scriptArgs(clock string, cost int64, a args) []string {
	return []string{clock, s.floorMS, costArg(cost, a), "0", a.strs[0], a.strs[1], a.strs[2], a.strs[3]}
}
