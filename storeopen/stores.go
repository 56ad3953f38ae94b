// Package storeopen opens the counter stores a configuration file names and
// gives each rule its store: the store section's (memory or Redis) and,
// over the same connection, the consistency tiers' (strict and eventual on
// Redis, local in memory, gossip on the store.gossip section's node). Every view of Redis answers its failures by the
// failure mode of the rules it serves (rules.Config.OnErrorOf). The
// gateway and tollgate forward-auth open their stores here, so that both
// serve every tier alike.
package storeopen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/eventual"
	"github.com/tollgate-dev/tollgate/store/gossip"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis"
	"github.com/tollgate-dev/tollgate/store/redis/redisconf"
)

// Set supplies the stores of the rules (the engine's and, through
// rules.Config.Stores, those of the consistency tiers), all over one
// store connection:
//
//	default   the memory store, or the Redis store answering its failures
//	          by the rules' failure mode (WithFailure)
//	strict    the Redis store, with the rule's failure mode (WithFailure)
//	eventual  an eventual.Store over the Redis store, one per sync interval
//	gossip    the gossip node of store.gossip, answering by the rule's
//	          failure mode until warm: open allows, closed refuses, local
//	          decides on the local store alone
//	local     an in-memory store (the gateway's own when the store is in
//	          memory); the rule engine divides the policies by nodes
//
// Stores are made on first use and kept until Close, so that a reload
// keeps their counts. A Set is safe for concurrent use.
type Set struct {
	redis  *redis.Store        // nil when the store is in memory
	mem    *memory.Store       // the store section's memory store, if any
	clock  *memory.CoarseClock // the memory stores' clock, nil for the real one
	gossip *gossip.Store       // nil without store.gossip
	cold   coldCounts          // gossip decisions answered before warm-up
	// secMu guards section (Same, Rotate) and serializes rotations.
	secMu   sync.Mutex
	section config.Store // what was opened, and rotated to, for Same

	mu       sync.Mutex
	eventual map[time.Duration]*eventual.Store
	local    *memory.Store // made for local rules when mem is nil
	closed   bool
}

// Engine returns the store of cfg's rules without a tier (the engine's
// store, for rules.New): the memory store, or a view of the Redis store
// answering its failures by cfg's failure mode.
func (t *Set) Engine(cfg *rules.Config) (limit.Store, error) {
	return t.Default(cfg.OnErrorOf(&rules.Rule{})), nil
}

// Default returns the store section's store as rules without a tier see
// it: the memory store, or the view of the Redis store answering its
// failures by mode. Views of one mode are equal, so the rule engine
// charges the rules that share a mode together, atomically.
func (t *Set) Default(mode failmode.Mode) limit.Store {
	if t.redis == nil {
		return t.mem
	}
	return t.redis.WithFailure(mode)
}

// For returns the rules.StoreFunc of cfg (its Stores field): each rule's
// store by its tier, with its failure mode as cfg.OnErrorOf decides it.
func (t *Set) For(cfg *rules.Config) rules.StoreFunc {
	c := *cfg
	return func(r rules.Rule) (limit.Store, error) { return t.Tier(r, c.OnErrorOf(&r)) }
}

// Tier returns the store of r, a rule with a tier (its Consistency and,
// for eventual, SyncInterval), whose failure mode is onError: what For
// gives a rule, for a front end without a rules.Config (tollgate
// envoy-rls).
func (t *Set) Tier(r rules.Rule, onError failmode.Mode) (limit.Store, error) {
	switch r.Consistency {
	case rules.ConsistencyStrict:
		if t.redis == nil {
			return nil, errors.New("needs store.redis")
		}
		return t.redis.WithFailure(onError), nil
	case rules.ConsistencyEventual:
		if t.redis == nil {
			return nil, errors.New("needs store.redis")
		}
		iv := r.SyncInterval
		if iv == 0 {
			iv = rules.DefaultSyncInterval
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.closed {
			return nil, errors.New("stores closed")
		}
		if s := t.eventual[iv]; s != nil {
			return s, nil
		}
		s, err := eventual.New(eventual.Config{Redis: t.redis, Interval: iv})
		if err != nil {
			return nil, err
		}
		if t.eventual == nil {
			t.eventual = map[time.Duration]*eventual.Store{}
		}
		t.eventual[iv] = s
		return s, nil
	case rules.ConsistencyGossip:
		if t.gossip == nil {
			return nil, errors.New("needs store.gossip")
		}
		v := gossipView{g: t.gossip, mode: onError, cold: &t.cold}
		if onError == failmode.Local {
			local, err := t.localStore()
			if err != nil {
				return nil, err
			}
			v.local = local
		}
		return v, nil
	case rules.ConsistencyLocal:
		return t.localStore()
	}
	return nil, fmt.Errorf("unknown consistency %q", r.Consistency)
}

// localStore returns the in-process store of local rules: the store
// section's memory store, or one made on first use.
func (t *Set) localStore() (limit.Store, error) {
	if t.mem != nil {
		return t.mem, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errors.New("stores closed")
	}
	if t.local == nil {
		s, err := memory.New(memoryConfig(memory.DefaultMaxKeys, t.clock))
		if err != nil {
			return nil, err
		}
		t.local = s
	}
	return t.local, nil
}

// closeTiers stops the eventual stores (each pushes its last deltas) and
// the local store.
func (t *Set) closeTiers() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for _, s := range t.eventual {
		s.Close()
	}
	if t.local != nil {
		t.local.Close()
	}
	if t.gossip != nil {
		t.gossip.Close() // sends its last round and leaves the fleet
	}
}

// Open opens the store the store section sc names: memory unless Redis is
// given. Decisions in memory read a clock cached every millisecond (one
// atomic load instead of a clock read per decision, nginx's own
// resolution); a refusal reads the real clock once more, in case the
// cache lags (memory.Config.Recheck). A Redis that is down does not fail
// Open: it returns once the first connection attempt ends, and until
// Redis is reached every rule answers by its failure mode. log, when not
// nil, receives the Redis store's state changes.
func Open(sc config.Store, log *slog.Logger) (*Set, error) {
	var t *Set
	if sc.Redis != nil {
		rc, err := redisConfig(sc.Redis)
		if err != nil {
			return nil, err
		}
		if t, err = OpenRedis(rc, log); err != nil {
			return nil, err
		}
	} else {
		clock := memory.NewCoarseClock(time.Millisecond)
		t = &Set{clock: clock}
		maxKeys := 0
		if sc.Memory != nil {
			maxKeys = sc.Memory.MaxKeys
		}
		var err error
		if t.mem, err = memory.New(memoryConfig(maxKeys, clock)); err != nil {
			clock.Close()
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	t.section = sc
	if sc.Gossip != nil {
		g, err := gossip.New(gossipConfig(sc.Gossip, log))
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("store.gossip: %w", err)
		}
		t.gossip = g
	}
	return t, nil
}

// OpenRedis opens a Set on the Redis store rc configures, as Open does
// for a store section naming Redis: for a front end configured otherwise
// than by a tollgate file (tollgate envoy-rls, from envoyproxy/ratelimit's
// environment). log, when not nil and rc.Logger is nil, receives the
// store's state changes. Credentials or a certificate Redis refuses fail
// it; a Redis that is down does not.
func OpenRedis(rc redis.Config, log *slog.Logger) (*Set, error) {
	if rc.Logger == nil {
		rc.Logger = log
	}
	clock := memory.NewCoarseClock(time.Millisecond)
	t := &Set{clock: clock}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if t.redis, err = redis.New(ctx, rc); err != nil {
		clock.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	// A certificate not trusted or credentials refused will not mend by
	// waiting, unlike a Redis that is down: say so now.
	if err := t.redis.DialError(); redis.IsConfigError(err) {
		t.redis.Close()
		clock.Close()
		return nil, fmt.Errorf("store.redis: cannot connect: %w", err)
	}
	return t, nil
}

// Redis returns the Redis store, or nil when the store is in memory.
func (t *Set) Redis() *redis.Store { return t.redis }

// Gossip returns the gossip node of store.gossip, or nil without one.
func (t *Set) Gossip() *gossip.Store { return t.gossip }

// ColdDecisions returns the gossip rules' decisions answered by their
// failure mode before this gateway was warm, by mode.
func (t *Set) ColdDecisions() ColdDecisions {
	return ColdDecisions{Open: t.cold.open.Load(), Closed: t.cold.closed.Load(), Local: t.cold.local.Load()}
}

// Memory returns the store section's memory store, or nil when the store
// is Redis.
func (t *Set) Memory() *memory.Store { return t.mem }

// Close stops the tiers' stores (each eventual store pushes its last
// deltas), then the store section's store and the clock.
func (t *Set) Close() error {
	t.closeTiers()
	var err error
	if t.redis != nil {
		err = t.redis.Close()
	}
	if t.mem != nil {
		err = errors.Join(err, t.mem.Close())
	}
	t.clock.Close()
	return err
}

// Same reports whether sc opens the same store as the one t was opened
// from: a reload that changes it needs a restart. The credentials and TLS
// settings are not part of it: Rotate changes them.
func (t *Set) Same(sc config.Store) bool {
	t.secMu.Lock()
	defer t.secMu.Unlock()
	return reflect.DeepEqual(shape(sc), shape(t.section))
}

// shape is what of a store section names the store, for comparison.
func shape(s config.Store) any {
	type redisShape struct {
		URL, Prefix string // the URL without its user info
		Cluster     string
		Sentinel    string
		Timeout     time.Duration
	}
	type storeShape struct {
		Memory  bool
		MaxKeys int
		Redis   *redisShape
		Gossip  *gossipconf.Config
	}
	var sh storeShape
	if s.Memory != nil {
		sh.Memory, sh.MaxKeys = true, s.Memory.MaxKeys
	}
	if r := s.Redis; r != nil {
		sh.Redis = &redisShape{URL: withoutUser(r.URL), Prefix: r.Prefix, Cluster: strings.Join(r.Cluster, ","), Timeout: r.Timeout}
		if sn := r.Sentinel; sn != nil {
			sh.Redis.Sentinel = sn.Master + "," + strings.Join(sn.Addrs, ",")
		}
	}
	sh.Gossip = s.Gossip // every field, the key read included: any change needs a restart
	return sh
}

// memoryConfig configures an in-memory store on the cached clock, read
// again before a refusal in case the cache lags (memory.Config.Recheck).
// A nil clock means the store's own.
func memoryConfig(maxKeys int, clock *memory.CoarseClock) memory.Config {
	c := memory.Config{MaxKeys: maxKeys}
	if clock != nil {
		c.Clock, c.Recheck = clock.Now, clock.Refresh
	}
	return c
}

// redisConfig translates the file's Redis section. The failure mode is
// the rules' (rules.Config.OnErrorOf): every rule is charged through a
// view of the store with its own mode, so the store's default is never
// used.
func redisConfig(r *redisconf.Config) (redis.Config, error) {
	u, err := url.Parse(r.URL)
	if err != nil {
		return redis.Config{}, errors.New("store.redis.url is malformed")
	}
	rc := redis.Config{
		Addrs:    append([]string{u.Host}, r.Cluster...),
		Prefix:   r.Prefix,
		Timeout:  r.Timeout,
		Username: r.Username(),
		Password: r.Password(),
		TLS:      r.TLSConfig(),
	}
	if sn := r.Sentinel; sn != nil {
		rc.MasterName = sn.Master
		rc.Addrs = append([]string{u.Host}, sn.Addrs...)
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		rc.DB, _ = strconv.Atoi(db)
	}
	return rc, nil
}

// withoutUser returns the URL s without its user info (the credentials,
// which Rotate changes), or s when it does not parse.
func withoutUser(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	u.User = nil
	return u.String()
}
