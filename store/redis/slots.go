package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/tollgate-dev/tollgate/limit"
)

// DefaultLease is Slots' lease when none is given.
const DefaultLease = 30 * time.Second

// acquireScript takes a slot of KEYS[1], a sorted set of leases scored by
// their expiry (ms, the server's clock): it drops the expired ones, then
// adds ARGV[3] if fewer than ARGV[1] remain. It answers {taken, held}.
var acquireScript = rueidis.NewLuaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[1]) then
  return {0, n}
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[3])
redis.call('PEXPIRE', KEYS[1], lease)
return {1, n + 1}
`)

// renewScript extends the leases ARGV[2..] of KEYS[1] still held to
// ARGV[1] ms from now (ZADD XX: a lease released or expired meanwhile is
// not brought back).
var renewScript = rueidis.NewLuaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', now + lease, ARGV[i])
end
if redis.call('ZCARD', KEYS[1]) > 0 then
  redis.call('PEXPIRE', KEYS[1], lease)
end
return 0
`)

// Slots is a limit.Slots on Redis, shared by the gateways using it: each
// key's slots are a sorted set of leases, PREFIX{KEY}, scored by their
// expiry on the server's clock. A slot expires Lease after it was taken
// or last renewed; while this process holds it, a renewer extends it
// every Lease/3, so a request may last longer than the lease, and a
// process that dies (or loses Redis) gives its slots back within a lease.
// Close stops the renewer. Safe for concurrent use.
type Slots struct {
	s     *Store
	lease time.Duration
	tag   string // this process's lease prefix
	next  atomic.Uint64

	mu   sync.Mutex
	held map[heldSlot]struct{}

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

type heldSlot struct {
	key   string
	lease limit.Lease
}

// Slots returns the store's concurrency slots with leases of lease
// (zero means DefaultLease; at least 100ms), and starts their renewer.
func (s *Store) Slots(lease time.Duration) *Slots {
	if lease == 0 {
		lease = DefaultLease
	}
	lease = max(lease, 100*time.Millisecond)
	var b [6]byte
	_, _ = rand.Read(b[:])
	sl := &Slots{s: s, lease: lease, tag: hex.EncodeToString(b[:]), held: map[heldSlot]struct{}{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go sl.renew()
	return sl
}

// Lease is the slots' lease length.
func (sl *Slots) Lease() time.Duration { return sl.lease }

func (sl *Slots) member(l limit.Lease) string {
	return sl.tag + ":" + strconv.FormatUint(uint64(l), 10)
}

func (sl *Slots) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, max(sl.s.cfg.Timeout, 10*time.Millisecond))
}

// Acquire takes a slot of key if fewer than max are held.
func (sl *Slots) Acquire(ctx context.Context, key string, max int64) (limit.Slot, error) {
	c, err := sl.s.client()
	if err != nil {
		return limit.Slot{}, err
	}
	lease := limit.Lease(sl.next.Add(1))
	cctx, cancel := sl.ctx(ctx)
	defer cancel()
	v, err := acquireScript.Exec(cctx, c, []string{sl.s.redisKey(key)},
		[]string{strconv.FormatInt(max, 10), strconv.FormatInt(sl.lease.Milliseconds(), 10), sl.member(lease)}).AsIntSlice()
	if err != nil {
		return limit.Slot{}, sl.s.keyError(key, err)
	}
	if len(v) != 2 {
		return limit.Slot{}, fmt.Errorf("redis: slots: unexpected reply %v", v)
	}
	if v[0] != 1 {
		return limit.Slot{Held: v[1]}, nil
	}
	sl.mu.Lock()
	sl.held[heldSlot{key, lease}] = struct{}{}
	sl.mu.Unlock()
	return limit.Slot{OK: true, Lease: lease, Held: v[1]}, nil
}

// Release gives the slot back. It is forgotten by the renewer even when
// Redis cannot be reached: it then expires with its lease.
func (sl *Slots) Release(ctx context.Context, key string, lease limit.Lease) error {
	sl.mu.Lock()
	delete(sl.held, heldSlot{key, lease})
	sl.mu.Unlock()
	c, err := sl.s.client()
	if err != nil {
		return err
	}
	cctx, cancel := sl.ctx(ctx)
	defer cancel()
	if err := c.Do(cctx, c.B().Zrem().Key(sl.s.redisKey(key)).Member(sl.member(lease)).Build()).Error(); err != nil {
		return sl.s.keyError(key, err)
	}
	return nil
}

// Held returns how many slots this process holds.
func (sl *Slots) Held() int {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return len(sl.held)
}

// renew extends the held leases every Lease/3 until Close.
func (sl *Slots) renew() {
	defer close(sl.done)
	t := time.NewTicker(sl.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-sl.stop:
			return
		case <-t.C:
			sl.renewOnce()
		}
	}
}

func (sl *Slots) heldByKey() map[string][]string {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	by := map[string][]string{}
	for h := range sl.held {
		by[h.key] = append(by[h.key], sl.member(h.lease))
	}
	return by
}

func (sl *Slots) renewOnce() {
	by := sl.heldByKey()
	if len(by) == 0 {
		return
	}
	c, err := sl.s.client()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sl.lease/3)
	defer cancel()
	execs := make([]rueidis.LuaExec, 0, len(by))
	ms := strconv.FormatInt(sl.lease.Milliseconds(), 10)
	for key, members := range by {
		execs = append(execs, rueidis.LuaExec{Keys: []string{sl.s.redisKey(key)}, Args: append([]string{ms}, members...)})
	}
	renewScript.ExecMulti(ctx, c, execs...)
}

// Close stops the renewer; the slots still held expire with their lease.
func (sl *Slots) Close() {
	sl.once.Do(func() {
		close(sl.stop)
		<-sl.done
	})
}
