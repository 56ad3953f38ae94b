package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/logthrottle"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// ErrCrossSlot reports an ApplyAll whose keys hash to different Redis
// Cluster slots: give them a common hash tag.
var ErrCrossSlot = errors.New("redis: ApplyAll keys are in different cluster slots (give them a common {hash tag})")

// ErrNotConnected reports a Store that has not reached Redis yet (it keeps
// trying in the background).
var ErrNotConnected = errors.New("redis: not connected yet")

// Store is a limit.Store on Redis. It is safe for concurrent use; Close
// releases its connections.
type Store struct {
	cfg      Config
	opt      rueidis.ClientOption  // under probeMu: a Reconnect changes it
	secret   string                // under probeMu: the password, hidden in errors
	dialErr  atomic.Pointer[error] // the last failed connection attempt's, redacted
	conn     atomic.Pointer[conn]  // nil until the first connection
	scripts  *scripts
	now      func() int64 // local clock, for the over-limit cache
	serverT  bool         // scripts read the server's TIME
	floorMS  string       // the scripts' TTL floor, ms
	breaker  *breaker
	deadline *deadlines
	cache    *overLimit
	local    *memory.Store

	stats   counters
	log     *logthrottle.Logger
	probeMu sync.Mutex
	bg      sync.WaitGroup // the dialer and the probe, while running
	stop    chan struct{}  // closed by Close: the dialer stops
	closing bool           // under probeMu: no more probes or connections
	onNow   func(us int64) // tests: the script's instant of each decision
	enc     encoded
	argv    sync.Pool // *[]string
	batch   batcher   // token-bucket decisions, gathered (batch.go)
}

// conn is the store's connection, once made.
type conn struct {
	client  rueidis.Client
	cluster bool
}

type counters struct {
	decisions, cacheHits, failures, timeouts      atomic.Uint64
	failOpen, failClosed, failLocal, shortCircuit atomic.Uint64
	replyErrors, dialFailures                     atomic.Uint64
}

// New returns a Store for cfg, connecting in the background: it fails only
// for an invalid cfg, never because Redis cannot be reached. It waits for
// the first connection attempt or for ctx to end, whichever is first; an
// attempt takes at most the TCP dial timeout (cfg.Timeout, at least one
// second) plus the handshake's (cfg.Timeout, at least 100ms), so a
// stalled server costs New about 100ms. A Store that has not reached Redis
// answers every decision by its failure mode, as if the breaker were open,
// and keeps trying every BreakerCooldown until it connects; Close stops it.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Store{
		cfg:      cfg,
		opt:      clientOption(cfg),
		secret:   cfg.Password,
		log:      logthrottle.New(cfg.Logger, logthrottle.Config{}),
		stop:     make(chan struct{}),
		scripts:  newScripts(),
		now:      cfg.Clock,
		serverT:  cfg.Clock == nil,
		breaker:  newBreaker(cfg.BreakerFailures, cfg.BreakerCooldown),
		deadline: newDeadlines(cfg.Timeout),
		cache:    newOverLimit(cfg.CacheSize),
	}
	s.batch.slot.L = &s.batch.mu
	if s.now == nil {
		s.now = memory.NewClock()
		s.floorMS = "0"
	} else {
		s.floorMS = fmt.Sprint(int64(cfg.MinTTL / time.Millisecond))
	}
	local, err := memory.New(memory.Config{MaxKeys: cfg.LocalMaxKeys, Clock: cfg.Clock})
	if err != nil {
		return nil, err
	}
	s.local = local
	s.breaker.onChange = s.breakerChanged
	first := make(chan struct{})
	s.bg.Add(1)
	go s.dial(first)
	select {
	case <-first:
	case <-ctx.Done():
	}
	return s, nil
}

// dial connects, trying again every BreakerCooldown until it succeeds or
// the store closes. It closes first after its first attempt.
func (s *Store) dial(first chan struct{}) {
	defer s.bg.Done()
	signal := func() {
		if first != nil {
			close(first)
			first = nil
		}
	}
	defer signal()
	var failures uint64
	for {
		s.probeMu.Lock()
		opt, secret := s.opt, s.secret
		s.probeMu.Unlock()
		client, err := rueidis.NewClient(opt)
		if err == nil {
			s.probeMu.Lock()
			if s.closing || s.conn.Load() != nil { // closed, or a Reconnect connected first
				s.probeMu.Unlock()
				client.Close()
				return
			}
			s.conn.Store(&conn{client: client, cluster: client.Mode() == rueidis.ClientModeCluster})
			s.dialErr.Store(nil)
			s.probeMu.Unlock()
			s.log.Log(context.Background(), slog.LevelInfo, "redis: connected",
				slog.Any("addrs", s.cfg.Addrs), slog.Uint64("failed_attempts", failures))
			return
		}
		failures++
		s.stats.dialFailures.Add(1)
		err = hideSecret(err, secret)
		s.dialErr.Store(&err)
		if failures == 1 {
			s.log.Log(context.Background(), slog.LevelWarn, "redis: not reachable; decisions follow the failure mode until it is",
				slog.Any("addrs", s.cfg.Addrs), slog.String("error", err.Error()),
				slog.Duration("retry_every", s.cfg.BreakerCooldown))
		}
		signal()
		t := time.NewTimer(s.cfg.BreakerCooldown)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// breakerChanged logs the breaker's opening or closing.
func (s *Store) breakerChanged(open bool) {
	if open {
		s.log.Log(context.Background(), slog.LevelWarn, "redis: circuit breaker opened; decisions follow the failure mode",
			slog.Int("consecutive_failures", s.cfg.BreakerFailures), slog.Duration("probe_every", s.cfg.BreakerCooldown))
		return
	}
	s.log.Log(context.Background(), slog.LevelInfo, "redis: circuit breaker closed; deciding on Redis again")
}

// Close stops connecting, releases the connections and the fallback
// store. It waits for a connection attempt in progress, which ends within
// its dial and handshake timeouts (see New). Decisions after Close fail
// over as if Redis were down.
func (s *Store) Close() error {
	s.probeMu.Lock()
	if s.closing {
		s.probeMu.Unlock()
		return nil
	}
	s.closing = true
	close(s.stop)
	s.probeMu.Unlock()
	s.bg.Wait()
	if c := s.conn.Load(); c != nil {
		c.client.Close()
	}
	s.log.Close()
	return s.local.Close()
}

// client returns the connection's client, or ErrNotConnected.
func (s *Store) client() (rueidis.Client, error) {
	if c := s.conn.Load(); c != nil {
		return c.client, nil
	}
	return nil, ErrNotConnected
}

// redisKey returns the Redis key of key: the prefix, and key wrapped in a
// hash tag unless it has one.
func (s *Store) redisKey(key string) string {
	if hasTag(key) {
		return s.cfg.Prefix + key
	}
	return s.cfg.Prefix + "{" + key + "}"
}

// hasTag reports whether Redis Cluster would hash only part of key: a '{'
// followed later by a '}' with at least one byte between.
func hasTag(key string) bool {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return false
	}
	j := strings.IndexByte(key[i+1:], '}')
	return j > 0
}

// clockArg returns the scripts' now argument: µs, or -1 for server TIME.
func (s *Store) clockArg() string {
	if s.serverT {
		return "-1"
	}
	return strconv.FormatInt(s.cfg.Clock()/1000, 10)
}

func (s *Store) getArgv() *[]string {
	if v, ok := s.argv.Get().(*[]string); ok {
		return v
	}
	v := make([]string, 0, 16)
	return &v
}

// Apply charges cost against key under p, with the failure mode of
// Config.OnFailure. It returns an error for a negative cost, an invalid
// policy or a caller's context that ended. Every store failure is answered
// by the failure mode, not by an error: a Redis that is not connected yet,
// down, slow, unavailable (a BUSY, LOADING, MASTERDOWN or READONLY reply)
// or behind an open breaker, and an error reply (a key holding a value
// that is not this algorithm's state, a script error).
func (s *Store) Apply(ctx context.Context, key string, p limit.Policy, cost int64) (limit.Decision, error) {
	return s.apply(ctx, key, p, cost, s.cfg.OnFailure)
}

// ApplyAll applies the requests in one script call, all or nothing, with
// the failure mode of Config.OnFailure. See limit.Store.
func (s *Store) ApplyAll(ctx context.Context, reqs []limit.Request) (limit.Decision, error) {
	return s.applyAll(ctx, reqs, s.cfg.OnFailure)
}

// WithFailure returns a limit.Store sharing s (connections, breaker,
// cache) that answers with mode when Redis cannot: the per-rule failure
// policy.
func (s *Store) WithFailure(mode failmode.Mode) limit.Store { return rule{s, mode} }

type rule struct {
	s    *Store
	mode failmode.Mode
}

func (r rule) Apply(ctx context.Context, key string, p limit.Policy, cost int64) (limit.Decision, error) {
	return r.s.apply(ctx, key, p, cost, r.mode)
}

func (r rule) ApplyAll(ctx context.Context, reqs []limit.Request) (limit.Decision, error) {
	return r.s.applyAll(ctx, reqs, r.mode)
}

func (s *Store) apply(ctx context.Context, key string, p limit.Policy, cost int64, mode failmode.Mode) (limit.Decision, error) {
	if cost < 0 {
		return limit.Decision{}, limit.ErrNegativeCost
	}
	a, err := s.enc.get(p)
	if err != nil {
		return limit.Decision{}, err
	}
	var (
		now   int64
		epoch uint64
	)
	if s.cache != nil {
		now = s.now()
		var d limit.Decision
		var hit bool
		if d, epoch, hit = s.cache.get(key, p, cost, a.capacity, now); hit {
			s.stats.cacheHits.Add(1)
			d.Policy = p
			return d, nil
		}
	}
	c := s.conn.Load()
	if c == nil || !s.breaker.closed() {
		s.shortCircuit()
		return s.fail(ctx, mode, []limit.Request{{Key: key, Policy: p, Cost: cost}})
	}
	if a.alg == limit.AlgTokenBucket && !c.cluster {
		return s.applyBatched(ctx, c, key, p, cost, a, mode, now, epoch)
	}
	argv := s.getArgv()
	args := append((*argv)[:0], s.redisKey(key), s.clockArg(), s.floorMS, costArg(cost, a), "0",
		a.strs[0], a.strs[1], a.strs[2], a.strs[3])
	cctx, cancel := s.deadline.with(ctx)
	vals, err := s.scripts.one[a.alg].Exec(cctx, c.client, args[:1], args[1:]).AsIntSlice()
	for try := 1; try < maxTries && othersDeadline(cctx, err); try++ {
		vals, err = s.scripts.one[a.alg].Exec(cctx, c.client, args[:1], args[1:]).AsIntSlice()
	}
	cancel()
	clear(args)
	*argv = args[:0]
	s.argv.Put(argv)
	if err == nil && len(vals) < width+1 {
		err = errShortReply{fmt.Errorf("script returned %d values, want %d", len(vals), width+1)}
	}
	if err != nil {
		return s.failedCall(ctx, err, mode, []limit.Request{{Key: key, Policy: p, Cost: cost}})
	}
	return s.decided(key, p, cost, a, vals, now, epoch), nil
}

// costArg is a one-request script's cost argument: cost, capped above the
// capacity (any cost beyond it is refused alike).
func costArg(cost int64, a args) string { return strconv.FormatInt(min(cost, a.capacity+1), 10) }

// decided is Apply's decision from a script's reply vals (the decision's
// values, then the script's now), recorded as one.
func (s *Store) decided(key string, p limit.Policy, cost int64, a args, vals []int64, now int64, epoch uint64) limit.Decision {
	s.breaker.done(true)
	s.stats.decisions.Add(1)
	if s.onNow != nil {
		s.onNow(vals[width])
	}
	d := decode(vals, a)
	d.Policy = p
	if s.cache != nil {
		s.cache.record(key, p, cost, now, epoch, d)
	}
	return d
}

// decode reads a script's decision {allowed, remaining, reset, retry,
// delay, idle, next} in µs.
func decode(v []int64, a args) limit.Decision {
	d := limit.Decision{
		Allowed:       v[0] == 1,
		Limit:         a.capacity,
		Remaining:     v[1],
		ResetAfter:    time.Duration(v[2]) * time.Microsecond,
		RetryAfter:    time.Duration(v[3]) * time.Microsecond,
		Delay:         time.Duration(v[4]) * time.Microsecond,
		IdleAt:        v[5] * 1000,
		NextUnitAfter: time.Duration(v[6]) * time.Microsecond,
	}
	if v[3] < 0 {
		d.RetryAfter = limit.Never
	}
	return d
}

func (s *Store) applyAll(ctx context.Context, reqs []limit.Request, mode failmode.Mode) (limit.Decision, error) {
	if len(reqs) == 0 {
		return limit.Decision{Allowed: true}, nil
	}
	enc := make([]args, len(reqs))
	keys := make([]string, len(reqs))
	for i, r := range reqs {
		if r.Cost < 0 {
			return limit.Decision{}, limit.ErrNegativeCost
		}
		a, err := s.enc.get(r.Policy)
		if err != nil {
			return limit.Decision{}, err
		}
		enc[i], keys[i] = a, s.redisKey(r.Key)
	}
	c := s.conn.Load()
	if c != nil && c.cluster {
		slot := keySlot(keys[0])
		for _, k := range keys[1:] {
			if keySlot(k) != slot {
				return limit.Decision{}, ErrCrossSlot
			}
		}
	}
	var (
		now    int64
		epochs []uint64
	)
	if s.cache != nil {
		now = s.now()
		epochs = make([]uint64, len(reqs))
		if d, ok := s.cache.getAll(reqs, enc, now, epochs); ok {
			s.stats.cacheHits.Add(1)
			return d, nil
		}
	}
	if c == nil || !s.breaker.closed() {
		s.shortCircuit()
		return s.fail(ctx, mode, reqs)
	}
	argv := make([]string, 0, 2+6*len(reqs))
	argv = append(argv, s.clockArg(), s.floorMS)
	for i, r := range reqs {
		a := enc[i]
		argv = append(argv, strconv.Itoa(int(a.alg)), strconv.FormatInt(min(r.Cost, a.capacity+1), 10),
			a.strs[0], a.strs[1], a.strs[2], a.strs[3])
	}
	cctx, cancel := s.deadline.with(ctx)
	vals, err := s.scripts.all.Exec(cctx, c.client, keys, argv).AsIntSlice()
	for try := 1; try < maxTries && othersDeadline(cctx, err); try++ {
		vals, err = s.scripts.all.Exec(cctx, c.client, keys, argv).AsIntSlice()
	}
	cancel()
	if err == nil && len(vals) < width*len(reqs)+1 {
		err = errShortReply{fmt.Errorf("script returned %d values, want %d", len(vals), width*len(reqs)+1)}
	}
	if err != nil {
		return s.failedCall(ctx, err, mode, reqs)
	}
	s.breaker.done(true)
	s.stats.decisions.Add(1)
	var out limit.Decision
	for i, r := range reqs {
		d := decode(vals[width*i:], enc[i])
		d.Policy, d.Index = r.Policy, i
		if s.cache != nil {
			s.cache.recordBatch(reqs, i, now, epochs[i], d)
		}
		if i == 0 {
			out = d
		} else {
			out = limit.Merge(out, d)
		}
	}
	return out, nil
}
