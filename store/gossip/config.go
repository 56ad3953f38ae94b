package gossip

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
)

// Config configures a Store: the settings a configuration file gives
// (store.gossip, package gossipconf, whose Defaults and Validate New
// applies: a setting, its default and its check are written once there),
// and what only code sets. A node needs its own Name; every other field
// has a documented default. In code, BindPort nil means
// gossipconf.DefaultPort (7946); point it at 0 for a free port (read it
// back with Store.Addr). A node with no seeds is a fleet of its own until
// another joins it, and is warm at once; a node with seeds is warm after
// its first full state exchange with a member (see Store.Warm). Key, when
// set, encrypts and authenticates all gossip (AES-GCM, memberlist's
// keyring): a packet or stream not sealed with it is dropped (and counted
// in Stats.Dropped.Unauthenticated). A new key finding its part of the
// table (one of 32 shards) full takes the place of an idle key or,
// failing that, of the least recently used key that is not being limited
// (Stats.Evicted); only when every key looked at is being limited does
// Apply refuse the new key with ErrFull, and gossip about it is dropped
// (Stats.Dropped.Full).
type Config struct {
	gossipconf.Config
	// Retransmit is how many rounds a changed counter is sent after its
	// last change. Zero means 3 when Fanout is zero: a packet lost (or a
	// peer briefly unreachable) is repaired by the next of them, or by
	// the key's next change (counters are sent whole, not as
	// increments), or at worst by a push/pull. A key that changes every
	// round costs no more; one that changes once costs three sends. With a positive Fanout zero means
	// memberlist's rule for epidemic broadcasts, 4 × ⌈log10(members+1)⌉,
	// so that a change reaches every node with high probability.
	Retransmit int
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
	// leaves it nil. Name, BindAddr, BindPort, Seeds, Key,
	// Interval and PushPullInterval are then unused, and Fanout must be
	// zero (a broadcast reaches every member).
	Transport Transport
	// Log receives memberlist's log lines. Nil discards them. They name
	// nodes and addresses, never keys.
	Log io.Writer
}

// The default of what only code sets (the others are gossipconf's).
const (
	// DefaultRetransmit is Retransmit's default without a Fanout.
	DefaultRetransmit = 3
)

// Validate reports every problem with c, or nil: gossipconf's checks of
// the settings (each key named in words: "gossip: bind address"), then
// those of what only code sets. It changes nothing: New applies the
// defaults first.
func (c Config) Validate() error {
	errs := []error{c.Config.Check("gossip", inWords)}
	if len(c.Name) > maxNameLen {
		errs = append(errs, fmt.Errorf("gossip: name is %d bytes, at most %d", len(c.Name), maxNameLen))
	}
	if c.Retransmit < 0 {
		errs = append(errs, fmt.Errorf("gossip: retransmit %d must not be negative", c.Retransmit))
	}
	if c.Transport != nil && c.Fanout != 0 {
		errs = append(errs, fmt.Errorf("gossip: fanout %d with a Transport: a Transport broadcasts to every member", c.Fanout))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with its zero fields set to their defaults
// (gossipconf's Defaults).
func (c Config) withDefaults() Config {
	c.Config.Defaults()
	return c
}

// inWords names a setting's key in messages: "bind_addr" is "gossip: bind
// address".
func inWords(key string) string {
	return "gossip: " + strings.ReplaceAll(strings.ReplaceAll(key, "_", " "), "addr", "address")
}
