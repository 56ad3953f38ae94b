package gossip

import (
	"errors"
	"fmt"
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
	table // the counters (table.go); its self is this node's id

	cfg    Config
	clock  func() int64 // the fleet's time: raw plus offset (clock.go)
	raw    func() int64 // this node's clock (Config.Clock)
	offset atomic.Int64 // fleet time − raw, 0..MaxSkew
	ml     *memberlist.Memberlist
	name   string // this node's name
	addr   string // host:port bound
	nodes  nodeTable

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
	s := &Store{cfg: cfg, raw: cfg.Clock,
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
	s.table.init(cfg.MaxKeys)
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
