package gossip

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Config configures a Store. The zero value of every field but Name has a
// documented default; Validate reports every problem at once.
type Config struct {
	// Name identifies this node in the fleet; every node needs its own.
	// A node restarted under the same name takes up its own counters
	// again (from its peers, when it warms up). Zero means the host name.
	Name string
	// BindAddr is the address gossip listens on (UDP and TCP). Zero means
	// 127.0.0.1: set it to an address the other nodes can reach.
	BindAddr string
	// BindPort is the port gossip listens on, UDP and TCP. Zero picks a
	// free port (read it back with Store.Addr); a fleet usually sets
	// memberlist's customary 7946.
	BindPort int
	// AdvertiseAddr is the IP address the other nodes reach this one at,
	// when it is not BindAddr (behind NAT, or BindAddr 0.0.0.0). Zero
	// means BindAddr (memberlist picks a private address for 0.0.0.0).
	AdvertiseAddr string
	// AdvertisePort is the port the other nodes reach this one at. Zero
	// means the port bound.
	AdvertisePort int
	// Seeds are the addresses ("host:port") of nodes to join. A node
	// with no seeds is a fleet of its own until another joins it, and is
	// warm at once; a node with seeds is warm after its first full state
	// exchange with a member (see Store.Warm).
	Seeds []string
	// SecretKey, when set, encrypts and authenticates all gossip (AES-GCM,
	// memberlist's keyring): 16, 24 or 32 bytes, the same on every node.
	// A packet or stream not sealed with it is dropped (and counted in
	// Stats.Dropped.Unauthenticated), so a node without the key can
	// neither join nor inject counts. Nil means plaintext gossip: use it
	// only on a trusted network.
	SecretKey []byte
	// Interval is the gossip round period: every Interval a node sends
	// the counters changed since the last round. Zero means 100ms.
	Interval time.Duration
	// Fanout is how many peers, picked at random, receive each round's
	// changes. Zero means every member: a change reaches every node
	// directly within one round. A positive fan-out sends to that many
	// and the receivers relay what was new to them (epidemic gossip:
	// less traffic per round, about log(nodes)/log(fanout+1) rounds).
	Fanout int
	// Retransmit is how many rounds a changed counter is sent after its
	// last change. Zero means 3 when Fanout is zero: a packet lost (or a
	// peer briefly unreachable) is repaired by the next of them, or by
	// the key's next change (counters are sent whole, not as
	// increments), or at worst by a push/pull. A key that changes every
	// round costs no more; one that changes once costs three sends. With a positive Fanout zero means
	// memberlist's rule for epidemic broadcasts, 4 × ⌈log10(members+1)⌉,
	// so that a change reaches every node with high probability.
	Retransmit int
	// MessageBytes caps one gossip message (one UDP packet), in bytes,
	// before encryption. Zero means 1400; at most 65,000.
	MessageBytes int
	// RoundBytes caps what one round sends each peer, in bytes: the
	// hottest keys go first and the rest wait for the next round. Zero
	// means 1 MiB.
	RoundBytes int
	// PushPullInterval is the period of the full state exchange with a
	// random member, which repairs whatever gossip lost. Zero means 10s.
	PushPullInterval time.Duration
	// MaxKeys bounds the keys held, local and learned. Zero means
	// 65,536. A new key finding its part of the table (one of 32 shards)
	// full takes the place of an idle key or, failing that, of the least
	// recently used key that is not being limited (counted in
	// Stats.Evicted), as the memory store does: a flood of new keys never
	// locks out new clients, and never frees a limited one. Only when
	// every key looked at is being limited does Apply refuse the new key
	// with ErrFull, and gossip about it is dropped (Stats.Dropped.Full).
	MaxKeys int
	// MaxStateBytes caps what one stream (TCP: a peer's full state, in a
	// push/pull) may announce before it is authenticated, in bytes: a
	// stream announcing more is closed at once, unread, and counted in
	// Stats.Dropped.Oversize. Zero means 8 MiB (about 100 bytes for each
	// of DefaultMaxKeys keys, counted by three nodes); at most 20 MiB,
	// memberlist's own bound. A node whose own full state is larger logs
	// it at each push/pull: raise it with MaxKeys.
	MaxStateBytes int
	// StateBytesInFlight caps what all the streams being read at once may
	// announce, in bytes: a stream that would take them over it is
	// closed at once and counted in Stats.Dropped.Busy (its peer tries
	// again at its next push/pull). Zero means twice MaxStateBytes; at
	// least MaxStateBytes.
	StateBytesInFlight int
	// Clock returns the time in Unix ns. Nil means the real clock. A
	// node decides on the fleet's time, its clock plus an offset that
	// the others' stamps raise (see the package doc, "Clock skew"): the
	// nodes' clocks must agree to within MaxSkew.
	Clock func() int64
	// netTransport uses memberlist's own NetTransport instead of
	// transport (the benchmarks' A/B).
	netTransport bool
	// Transport, when set, replaces memberlist: the Store joins no
	// fleet and runs no loop; each Round it gives the round's messages
	// to Transport.Broadcast, and its owner delivers them to the other
	// nodes with MergeDelta, and calls Round and Sweep itself (see
	// transport.go). It is the seam of package fleetsim, which runs
	// thousands of nodes on a virtual clock and network; a gateway
	// leaves it nil. Name, BindAddr, BindPort, Seeds, SecretKey,
	// Interval and PushPullInterval are then unused, and Fanout must be
	// zero (a broadcast reaches every member).
	Transport Transport
	// Log receives memberlist's log lines. Nil discards them. They name
	// nodes and addresses, never keys.
	Log io.Writer
}

// Defaults, applied by New to zero fields.
const (
	DefaultInterval         = 100 * time.Millisecond
	DefaultRetransmit       = 3
	DefaultMessageBytes     = 1400
	DefaultRoundBytes       = 1 << 20
	DefaultPushPullInterval = 10 * time.Second
	DefaultMaxKeys          = 1 << 16
	DefaultMaxStateBytes    = 8 << 20
	// MaxStateBytesLimit is the largest MaxStateBytes: memberlist's own
	// bound on a stream.
	MaxStateBytesLimit = 20 << 20
	maxMessageBytes    = 65000
)

// Validate reports every problem with c, or nil.
func (c Config) Validate() error {
	var errs []error
	if len(c.Name) > maxNameLen {
		errs = append(errs, fmt.Errorf("gossip: name is %d bytes, at most %d", len(c.Name), maxNameLen))
	}
	if c.BindAddr != "" && net.ParseIP(c.BindAddr) == nil {
		errs = append(errs, fmt.Errorf("gossip: bind address %q is not an IP address", c.BindAddr))
	}
	if c.AdvertiseAddr != "" && net.ParseIP(c.AdvertiseAddr) == nil {
		errs = append(errs, fmt.Errorf("gossip: advertise address %q is not an IP address", c.AdvertiseAddr))
	}
	if c.AdvertisePort < 0 || c.AdvertisePort > 65535 {
		errs = append(errs, fmt.Errorf("gossip: advertise port %d outside 0..65535", c.AdvertisePort))
	}
	if c.BindPort < 0 || c.BindPort > 65535 {
		errs = append(errs, fmt.Errorf("gossip: bind port %d outside 0..65535", c.BindPort))
	}
	for _, s := range c.Seeds {
		if _, _, err := net.SplitHostPort(s); err != nil {
			errs = append(errs, fmt.Errorf("gossip: seed %q: %w", s, err))
		}
	}
	if n := len(c.SecretKey); n != 0 && n != 16 && n != 24 && n != 32 {
		errs = append(errs, fmt.Errorf("gossip: secret key is %d bytes, want 16, 24 or 32", n))
	}
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("gossip: interval %v must not be negative", c.Interval))
	}
	if c.Fanout < 0 {
		errs = append(errs, fmt.Errorf("gossip: fanout %d must not be negative", c.Fanout))
	}
	if c.Retransmit < 0 {
		errs = append(errs, fmt.Errorf("gossip: retransmit %d must not be negative", c.Retransmit))
	}
	if c.MessageBytes < 0 || c.MessageBytes > maxMessageBytes {
		errs = append(errs, fmt.Errorf("gossip: message bytes %d outside 0..%d", c.MessageBytes, maxMessageBytes))
	} else if c.MessageBytes != 0 && c.MessageBytes < 256 {
		errs = append(errs, fmt.Errorf("gossip: message bytes %d below 256", c.MessageBytes))
	}
	if c.RoundBytes < 0 {
		errs = append(errs, fmt.Errorf("gossip: round bytes %d must not be negative", c.RoundBytes))
	}
	if c.PushPullInterval < 0 {
		errs = append(errs, fmt.Errorf("gossip: push/pull interval %v must not be negative", c.PushPullInterval))
	}
	if c.MaxKeys < 0 {
		errs = append(errs, fmt.Errorf("gossip: max keys %d must not be negative", c.MaxKeys))
	}
	if c.MaxStateBytes < 0 || c.MaxStateBytes > MaxStateBytesLimit {
		errs = append(errs, fmt.Errorf("gossip: max state bytes %d outside 0..%d (memberlist's bound)", c.MaxStateBytes, MaxStateBytesLimit))
	}
	if c.StateBytesInFlight < 0 {
		errs = append(errs, fmt.Errorf("gossip: state bytes in flight %d must not be negative", c.StateBytesInFlight))
	} else if per := cmp.Or(c.MaxStateBytes, DefaultMaxStateBytes); c.StateBytesInFlight != 0 && c.StateBytesInFlight < per {
		errs = append(errs, fmt.Errorf("gossip: state bytes in flight %d below max state bytes %d", c.StateBytesInFlight, per))
	}
	if c.Transport != nil && c.Fanout != 0 {
		errs = append(errs, fmt.Errorf("gossip: fanout %d with a Transport: a Transport broadcasts to every member", c.Fanout))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.BindAddr == "" {
		c.BindAddr = "127.0.0.1"
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.MessageBytes == 0 {
		c.MessageBytes = DefaultMessageBytes
	}
	if c.RoundBytes == 0 {
		c.RoundBytes = DefaultRoundBytes
	}
	if c.PushPullInterval == 0 {
		c.PushPullInterval = DefaultPushPullInterval
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = DefaultMaxKeys
	}
	if c.MaxStateBytes == 0 {
		c.MaxStateBytes = DefaultMaxStateBytes
	}
	if c.StateBytesInFlight == 0 {
		c.StateBytesInFlight = 2 * c.MaxStateBytes
	}
	return c
}
