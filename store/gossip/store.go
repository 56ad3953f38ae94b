package gossip

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// ErrUnsupported reports a policy whose algorithm cannot be gossiped (the
// sliding log, the leaky bucket); the error names the algorithm.
var ErrUnsupported = fmt.Errorf("%w: gossip: algorithm not supported (want fixed_window, sliding_window or token_bucket)", limit.ErrInvalidPolicy)

// deadNodeReclaim is how long a dead node's name stays bound to its old
// address (memberlist's DeadNodeReclaimTime).
const deadNodeReclaim = time.Second

// ErrNotWarm is returned by Apply and ApplyAll before the node's first
// full state exchange with a member (see Store.Warm): a node that has not
// heard the fleet's counters refuses to decide rather than admit a whole
// limit of its own.
var ErrNotWarm = errors.New("gossip: node not warm: no state exchange with the fleet yet")

// ErrFull is returned by Apply for a new key when its shard of the key
// table is full and every key that could make room is being limited (see
// Config.MaxKeys).
var ErrFull = errors.New("gossip: key table full")

// ErrKeyTooLong reports a key longer than MaxKeyLen bytes.
var ErrKeyTooLong = fmt.Errorf("gossip: key longer than %d bytes", MaxKeyLen)

// Store is a limit.Store that decides locally against this node's
// counters plus the merged view of every other node's, shared by gossip.
// It is safe for concurrent use. Close leaves the fleet and stops.
type Store struct {
	cfg    Config
	clock  func() int64 // the fleet's time: raw plus offset (clock.go)
	raw    func() int64 // this node's clock (Config.Clock)
	offset atomic.Int64 // fleet time − raw, 0..MaxSkew
	ml     *memberlist.Memberlist
	self   uint32 // this node's id
	name   string // this node's name
	addr   string // host:port bound
	nodes  nodeTable

	seed   maphash.Seed
	shards [32]shard
	max    int // keys per shard

	warm    atomic.Bool
	warmCh  chan struct{}
	warmOne sync.Once
	joined  chan struct{} // closed when New's join attempt has ended

	st      counters
	members memberTable

	relayRounds atomic.Int32 // 4 × ⌈log10(members+1)⌉, updated each round

	roundMu sync.Mutex // one round at a time
	// kick asks the loop for a round now: a node whose last round with a
	// fresh change is an interval old or more sends a new change at once
	// rather than at the next tick (see nudge).
	kick      chan struct{}
	kicked    atomic.Bool
	lastFresh atomic.Int64 // when a round last sent a fresh change (clock ns)
	tickOnly  atomic.Bool  // no nudge: rounds on the tick only (the benchmarks' A/B)
	enc       *encoder
	stop      chan struct{}
	done      chan struct{}
	once      sync.Once
	resyncs   sync.WaitGroup // push/pulls with returning nodes
	vals      valueTable     // shared values (values.go)
	logger    *log.Logger    // memberlist's and the stream gate's lines (logSink)
	gate      *streamGate    // the transport's (nil with memberlist's own)
}

type shard struct {
	mu    sync.Mutex
	m     map[string]*entry
	dirty []*entry // entries with counters to send
}

// entry is one key: its shape, the local policy (nil for a key only
// heard of), and every node's counter.
type entry struct {
	key   string
	sh    shape
	slots []slot
	dirty bool  // listed in its shard's dirty list
	heat  int64 // cost changed since last sent: the hottest go first
	used  int64 // when last decided or merged (clock ns): eviction's recency
}

// slot is one node's counter for a key, and what is left to send of it.
type slot struct {
	node  uint32
	c     counter
	sends int32 // rounds it is still to be sent in
	since int64 // when its oldest unsent change was made (Unix ns), or 0
}

// nodeTable interns node names as small integers.
type nodeTable struct {
	mu    sync.RWMutex
	ids   map[string]uint32
	names []string
}

func (t *nodeTable) id(name []byte) (uint32, bool) {
	t.mu.RLock()
	id, ok := t.ids[string(name)]
	t.mu.RUnlock()
	if ok {
		return id, true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.ids[string(name)]; ok {
		return id, true
	}
	if len(t.names) >= maxNodes {
		return 0, false
	}
	id = uint32(len(t.names))
	n := string(name)
	t.ids[n] = id
	t.names = append(t.names, n)
	return id, true
}

func (t *nodeTable) name(id uint32) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.names[id]
}

// New starts a node: it binds, starts joining the seeds in the background
// (retrying while none answers) and starts gossiping. The node is warm
// (see Ready) once the join's state exchange is merged.
func New(cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, raw: cfg.Clock, seed: maphash.MakeSeed(), max: max(cfg.MaxKeys/32, 1),
		warmCh: make(chan struct{}), joined: make(chan struct{}), enc: newEncoder(cfg.MessageBytes),
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	s.nodes.ids = make(map[string]uint32)
	s.members.gone = make(map[string]int64)
	s.members.live = make(map[string]memberlist.Node)
	s.members.suspect = make(map[string]bool)
	s.members.returned = s.resync
	if s.raw == nil {
		s.raw = memory.NewClock()
		if testClockOffset != 0 {
			s.raw = offsetClock(s.raw, testClockOffset)
		}
	}
	s.clock = s.fleetNow
	for i := range s.shards {
		s.shards[i].m = make(map[string]*entry)
	}
	if cfg.Transport != nil {
		return s.detached(), nil
	}
	mc := memberlist.DefaultLANConfig()
	if cfg.Name != "" { // the host name by default (gossipconf's Defaults)
		mc.Name = cfg.Name
	}
	mc.BindAddr, mc.BindPort = cfg.BindAddr, cfg.Port()
	mc.AdvertiseAddr, mc.AdvertisePort = cfg.AdvertiseAddr, cfg.Port()
	if cfg.AdvertisePort != 0 {
		mc.AdvertisePort = cfg.AdvertisePort
	}
	mc.SecretKey = cfg.Key
	mc.PushPullInterval = cfg.PushPullInterval
	// A node restarted under its name at another address (a new port, a
	// rescheduled container) takes its name back once its old incarnation
	// has been dead a second: memberlist's default refuses it for ever,
	// as a conflict, leaving the old address counted dead and the node
	// itself out of the others' rounds.
	mc.DeadNodeReclaimTime = deadNodeReclaim
	// Messages are compact varints already; memberlist's LZW would cost
	// more CPU per packet than it saves bytes.
	mc.EnableCompression = false
	mc.Delegate = delegate{s}
	mc.Events = &s.members
	mc.Ping = pinger{&s.members}
	s.logger = log.New(logSink{s}, "", 0)
	mc.Logger = s.logger
	self, _ := s.nodes.id([]byte(mc.Name))
	s.self, s.name = self, mc.Name
	if !cfg.netTransport {
		s.gate = newStreamGate(len(cfg.Key) > 0, int64(cfg.MaxStateBytes), int64(cfg.StateBytesInFlight), &s.st, s.logger.Printf)
		tr, err := newTransport(cfg.BindAddr, cfg.Port(), s.gate)
		if err != nil {
			return nil, err
		}
		mc.Transport = tr
		if mc.BindPort == 0 { // memberlist reads it for seeds given without a port
			mc.BindPort = tr.port()
		}
		if mc.AdvertisePort == 0 {
			mc.AdvertisePort = tr.port()
		}
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		if mc.Transport != nil {
			mc.Transport.Shutdown()
		}
		return nil, fmt.Errorf("gossip: %w", err)
	}
	s.ml = ml
	s.addr = ml.LocalNode().Address() // before any other node can change it
	s.updateRelayRounds()
	if len(s.seeds()) == 0 {
		s.setWarm()
		close(s.joined)
	} else {
		// Joining waits on the seeds (memberlist's TCP timeout, 10s, for
		// one that accepts and does not answer): New does not, so that a
		// gateway serves, answering by its warm-up rule, meanwhile.
		s.resyncs.Go(func() {
			defer close(s.joined)
			s.join()
		})
	}
	go s.loop()
	return s, nil
}

// Addr returns the address ("host:port") this node gossips on, with the
// port it bound (Config.BindPort zero picks one).
func (s *Store) Addr() string { return s.addr }

// Name returns this node's name.
func (s *Store) Name() string { return s.name }

// Warm reports whether the node has exchanged full state with a member
// (or has no seeds): before, Apply refuses to decide with ErrNotWarm.
func (s *Store) Warm() bool { return s.warm.Load() }

// Ready returns a channel closed when the node becomes warm.
func (s *Store) Ready() <-chan struct{} { return s.warmCh }

func (s *Store) setWarm() {
	s.warmOne.Do(func() {
		s.warm.Store(true)
		close(s.warmCh)
	})
}

// join tries the seeds once; the push/pull of a successful join warms the
// node up (MergeRemoteState).
func (s *Store) join() {
	if seeds := s.seeds(); len(seeds) > 0 {
		s.ml.Join(seeds) // an error leaves the node alone: the loop retries
	}
}

// seeds returns the configured seeds but this node's own address (a
// fleet's nodes may share one list).
func (s *Store) seeds() []string {
	return slices.DeleteFunc(slices.Clone(s.cfg.Seeds), func(a string) bool { return a == s.addr })
}

// resync exchanges full state with a node that came back after being
// declared dead (memberlist's Join is a push/pull), on a goroutine that
// shutdown waits for: the node missed the rounds in between, and this
// node missed its.
func (s *Store) resync(addr string) {
	select {
	case <-s.stop:
		return
	default:
	}
	s.resyncs.Go(func() { s.ml.Join([]string{addr}) })
}

// Close sends the pending changes in one last round, leaves the fleet
// (its counters keep counting on the other nodes until their windows end)
// and stops.
func (s *Store) Close() error {
	return s.shutdown(true)
}

// shutdown stops the node, announcing it (leave) or not (a crash, for
// tests).
func (s *Store) shutdown(leave bool) error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		if s.ml == nil { // a Transport's node: no memberlist, no loop
			return
		}
		if leave {
			s.round()
			err = s.ml.Leave(s.cfg.Interval * 5)
		}
		err = errors.Join(err, s.ml.Shutdown())
		s.resyncs.Wait()
	})
	return err
}

func (s *Store) loop() {
	defer close(s.done)
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	rejoin := max(int(time.Second/s.cfg.Interval), 1)
	for n := 1; ; n++ {
		select {
		case <-s.stop:
			return
		case <-s.kick:
			s.kicked.Store(false)
			s.round()
			continue
		case <-t.C:
		}
		s.round()
		if n%rejoin == 0 {
			if s.ml.NumMembers() <= 1 {
				s.join()
			}
			s.sweep(s.clock())
		}
	}
}

func (s *Store) shardIndex(key string) int { return int(maphash.String(s.seed, key) & 31) }

// Apply decides locally against the key's counters, this node's and the
// merged view of the others'.
func (s *Store) Apply(ctx context.Context, key string, p limit.Policy, cost int64) (limit.Decision, error) {
	if cost < 0 {
		return limit.Decision{}, limit.ErrNegativeCost
	}
	if len(key) > MaxKeyLen {
		return limit.Decision{}, ErrKeyTooLong
	}
	sp, sh, err := shapeOf(p)
	if err != nil {
		return limit.Decision{}, err
	}
	if !s.warm.Load() {
		return limit.Decision{}, ErrNotWarm
	}
	now := s.clock()
	w := max(now, 0) / sh.period
	shd := &s.shards[s.shardIndex(key)]
	shd.mu.Lock()
	defer shd.mu.Unlock()
	e := shd.m[key]
	var own counter
	if e != nil && e.sh == sh {
		own = e.own(s.self)
	}
	v := e.viewWith(w, s.self, own, sh)
	st, m := sh.state(v, w, now)
	_, d := sp.Decide(st, now, cost)
	d.Policy = p
	if e != nil {
		e.used = now
	}
	if !d.Allowed || cost == 0 {
		return d, nil
	}
	if e == nil {
		if e = s.newEntry(shd, key, sh, now); e == nil {
			return limit.Decision{}, ErrFull
		}
	} else if e.sh != sh {
		e.reshape(sh)
	}
	sh.charge(&own, v, m, w, now, cost)
	s.setOwn(shd, e, own, cost, now)
	return d, nil
}

// ApplyAll decides every request locally, all or nothing, under the locks
// of every shard the requests touch (taken in shard order).
func (s *Store) ApplyAll(ctx context.Context, reqs []limit.Request) (limit.Decision, error) {
	if len(reqs) == 0 {
		return limit.Decision{Allowed: true}, nil
	}
	type work struct {
		sp  limit.Stateful
		sh  shape
		key string
	}
	ws := make([]work, len(reqs))
	idx := make([]int, 0, len(reqs))
	for i, r := range reqs {
		if r.Cost < 0 {
			return limit.Decision{}, limit.ErrNegativeCost
		}
		if len(r.Key) > MaxKeyLen {
			return limit.Decision{}, ErrKeyTooLong
		}
		sp, sh, err := shapeOf(r.Policy)
		if err != nil {
			return limit.Decision{}, err
		}
		ws[i] = work{sp: sp, sh: sh, key: r.Key}
		if j := s.shardIndex(r.Key); !slices.Contains(idx, j) {
			idx = append(idx, j)
		}
	}
	if !s.warm.Load() {
		return limit.Decision{}, ErrNotWarm
	}
	slices.Sort(idx)
	for _, j := range idx {
		s.shards[j].mu.Lock()
	}
	defer func() {
		for _, j := range idx {
			s.shards[j].mu.Unlock()
		}
	}()
	now := s.clock()
	// Decide on working copies of this node's counters, so that a key
	// named twice sees its first charge, and commit only if all allow.
	type charge struct {
		own  counter
		sh   shape
		cost int64
	}
	owns := make(map[string]*charge, len(reqs))
	var out limit.Decision
	for i, r := range reqs {
		wk := ws[i]
		e := s.shards[s.shardIndex(r.Key)].m[r.Key]
		c := owns[r.Key]
		if c == nil || c.sh != wk.sh {
			c = &charge{sh: wk.sh}
			if e != nil && e.sh == wk.sh {
				c.own = e.own(s.self)
			}
			owns[r.Key] = c
		}
		w := max(now, 0) / wk.sh.period
		if e != nil && e.sh != wk.sh {
			e = nil // a changed policy starts from nothing
		}
		v := e.viewWith(w, s.self, c.own, wk.sh)
		st, m := wk.sh.state(v, w, now)
		_, d := wk.sp.Decide(st, now, r.Cost)
		if d.Allowed && r.Cost > 0 {
			wk.sh.charge(&c.own, v, m, w, now, r.Cost)
			c.cost += r.Cost
		}
		d.Policy, d.Index = r.Policy, i
		if i == 0 {
			out = d
		} else {
			out = limit.Merge(out, d)
		}
	}
	if !out.Allowed {
		return out, nil
	}
	for key, c := range owns {
		if c.cost == 0 {
			continue
		}
		shd := &s.shards[s.shardIndex(key)]
		e := shd.m[key]
		if e == nil {
			// A full table takes the key anyway: MaxKeys is exceeded by
			// at most a batch, and what was admitted is never lost.
			e = &entry{key: key, sh: c.sh}
			shd.m[key] = e
		} else if e.sh != c.sh {
			e.reshape(c.sh)
		}
		s.setOwn(shd, e, c.own, c.cost, now)
	}
	return out, nil
}

// own returns this node's counter in e.
func (e *entry) own(self uint32) counter {
	for i := range e.slots {
		if e.slots[i].node == self {
			return e.slots[i].c
		}
	}
	return counter{}
}

// viewWith sums e's counters for window w, with own in place of this
// node's. A nil e is an empty key.
func (e *entry) viewWith(w int64, self uint32, own counter, sh shape) view {
	var v view
	v.add(own, w)
	if e == nil || e.sh != sh {
		return v
	}
	for i := range e.slots {
		if e.slots[i].node != self {
			v.add(e.slots[i].c, w)
		}
	}
	return v
}

// reshape puts e under another shape (a changed policy, on a reload):
// the counters of the old one mean nothing under it.
func (e *entry) reshape(sh shape) {
	e.sh, e.slots, e.heat = sh, e.slots[:0], 0
}

// slot returns node's slot in e, added if absent.
func (e *entry) slot(node uint32) *slot {
	for i := range e.slots {
		if e.slots[i].node == node {
			return &e.slots[i]
		}
	}
	e.slots = append(e.slots, slot{node: node})
	return &e.slots[len(e.slots)-1]
}

// setOwn stores this node's counter c in e after admitting cost at now,
// and schedules it to be sent. The caller holds shd's lock.
func (s *Store) setOwn(shd *shard, e *entry, c counter, cost, now int64) {
	sl := e.slot(s.self)
	sl.c = c
	sl.sends = s.retransmits()
	if sl.since == 0 {
		sl.since = now
	}
	e.heat = addSat(e.heat, cost)
	if !e.dirty {
		shd.markDirty(e)
		s.nudge(now)
	}
}

// nudge asks for a round at once when no round has sent a fresh change
// for an interval: a change after a quiet spell leaves at once instead of
// waiting up to an interval for the tick, while under steady traffic
// (a fresh change in every round) rounds stay one per tick. A change is
// still sent Retransmit times in all, so this costs no bytes, only the
// batching of that first round.
func (s *Store) nudge(now int64) {
	if !s.tickOnly.Load() && now-s.lastFresh.Load() >= int64(s.cfg.Interval) && s.kicked.CompareAndSwap(false, true) {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// retransmits is how many rounds a changed counter is sent (see
// Config.Retransmit).
func (s *Store) retransmits() int32 {
	if s.cfg.Retransmit > 0 {
		return int32(s.cfg.Retransmit)
	}
	if s.cfg.Fanout == 0 {
		return DefaultRetransmit
	}
	return int32(s.relayRounds.Load())
}

func (shd *shard) markDirty(e *entry) {
	if !e.dirty {
		e.dirty = true
		shd.dirty = append(shd.dirty, e)
	}
}

// newEntry adds key to shd, making room if the shard is full (makeRoom);
// nil when every key that could make room is being limited. The caller
// holds shd's lock.
func (s *Store) newEntry(shd *shard, key string, sh shape, now int64) *entry {
	if len(shd.m) >= s.max && !s.makeRoom(shd, now) {
		return nil
	}
	e := &entry{key: key, sh: sh, used: now}
	shd.m[key] = e
	return e
}

// evictScan is how many keys makeRoom looks at, at most (the memory
// store's figure).
const evictScan = 64

// makeRoom makes a place in the full shard shd for a new key, as the
// memory store does: it drops the idle keys among up to evictScan it
// looks at (from a random place: map order), and failing that evicts the
// least recently used of those that are not being limited, one waiting
// to be sent last. A key being limited is never evicted before it is
// idle (that would give its client a fresh allowance, and make a flood of
// new keys a way to earn one); when every key looked at is, it reports
// false. Evicting a key that is not limited forgives what was counted of
// it, here and in this node's view of its peers. The caller holds shd's
// lock.
func (s *Store) makeRoom(shd *shard, now int64) bool {
	var (
		victim *entry
		seen   int
	)
	for k, e := range shd.m {
		if e.idle(now) {
			delete(shd.m, k)
		} else if !s.limited(e, now) && (victim == nil || evictFirst(e, victim)) {
			victim = e
		}
		if seen++; seen == evictScan {
			break
		}
	}
	if len(shd.m) < s.max {
		return true
	}
	if victim == nil {
		return false
	}
	delete(shd.m, victim.key)
	s.st.evicted.Add(1)
	return true
}

// evictFirst reports whether a is to be evicted rather than b: one
// waiting to be sent last, then the least recently used.
func evictFirst(a, b *entry) bool {
	if a.dirty != b.dirty {
		return !a.dirty
	}
	return a.used < b.used
}

// limited reports whether e's key has nothing left at now, on this
// node's view: a fixed window's count at the limit, a sliding window's
// two windows' counts (the estimate weighs the previous one less), a
// token bucket's TAT less than one emission interval from a full burst
// ahead.
func (s *Store) limited(e *entry, now int64) bool {
	sh := e.sh
	w := max(now, 0) / sh.period
	v := e.viewWith(w, s.self, e.own(s.self), sh)
	switch sh.alg {
	case limit.AlgFixedWindow:
		return v.cur >= sh.limit
	case limit.AlgSlidingWindow:
		return addSat(v.cur, v.prev) >= sh.limit
	default:
		tat, _ := sh.tokenTAT(v, w)
		return tat-now > sh.period-sh.period/sh.limit
	}
}

// idle reports whether no counter of e counts any more at now (so none
// is worth sending either).
func (e *entry) idle(now int64) bool {
	w := max(now, 0) / e.sh.period
	for i := range e.slots {
		if e.slots[i].c.Win >= w-1 {
			return false
		}
	}
	return true
}

// evict drops shd's idle keys.
func (s *Store) evict(shd *shard, now int64) {
	for k, e := range shd.m {
		if e.idle(now) {
			delete(shd.m, k)
		}
	}
}

// sweep drops every idle key: a departed node's counters age out with
// their windows.
func (s *Store) sweep(now int64) {
	for i := range s.shards {
		shd := &s.shards[i]
		shd.mu.Lock()
		s.evict(shd, now)
		shd.mu.Unlock()
	}
}

// logSink counts memberlist's reports of gossip that was not sealed with
// the secret key, notes its suspicions, and forwards its log lines to
// Config.Log.
type logSink struct{ s *Store }

func (l logSink) Write(p []byte) (int, error) {
	line := string(p)
	if strings.Contains(line, "[ERR]") && (strings.Contains(line, "ecrypt") || strings.Contains(line, "encrypt")) {
		l.s.st.unauthenticated.Add(1)
	}
	// memberlist's report of a probe without an ack, the one sign of
	// this node's suspicion it gives (TestSuspectMembersAreCounted
	// holds it to this wording).
	if name, ok := strings.CutPrefix(line[strings.Index(line, "]")+1:], " memberlist: Suspect "); ok {
		if name, ok := strings.CutSuffix(strings.TrimRight(name, "\n"), " has failed, no acks received"); ok {
			l.s.members.suspected(name)
		}
	}
	if l.s.cfg.Log != nil {
		return l.s.cfg.Log.Write(p)
	}
	return io.Discard.Write(p)
}
