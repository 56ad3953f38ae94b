// Package gossipconf is the gossip store's configuration (store.gossip):
// its settings, their defaults and their checks, and the reading of its
// secret key. It is apart from package store/gossip so that a
// configuration file can be parsed without memberlist: package config
// embeds Config, and store/gossip's own Config embeds it too, so a
// setting, its default and its check are written once. It imports no
// driver (a test keeps it so).
//
// The steps are explicit and in this order: Defaults fills the zero
// fields, ReadKey reads the secret key (a file or an environment
// variable) into Key, and Validate, which changes nothing, reports every
// problem as a *fielderr.Error at its key's path.
package gossipconf

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/internal/fielderr"
	"github.com/tollgate-dev/tollgate/internal/stableread"
)

// MaxSecretKeyFileBytes bounds secret_key_file: a key is at most 64 hex
// digits, and a path to something else (/dev/zero, a named pipe, a log
// file) is refused at load, not read until memory runs out.
const MaxSecretKeyFileBytes = 4 << 10

// Config is this gateway's membership in a gossip fleet (store.gossip;
// package store/gossip). Every gateway of the fleet has its own name and address
// and the same rules, interval and secret key.
type Config struct {
	// Name identifies this gateway in the fleet, unique in it. Default:
	// the host name. A gateway restarted under the same name takes its
	// own counters back from its peers.
	Name string `yaml:"name"`
	// BindAddr is the IP address gossip listens on (UDP and TCP).
	// Default 127.0.0.1: set an address the other gateways can reach.
	BindAddr string `yaml:"bind_addr"`
	// BindPort is the port gossip listens on, UDP and TCP. Default 7946
	// (memberlist's customary port); 0 picks a free one.
	BindPort *int `yaml:"bind_port"`
	// AdvertiseAddr is the IP address the other gateways reach this one
	// at, when it is not BindAddr (behind NAT, or BindAddr 0.0.0.0).
	// Default: BindAddr, or the first private address when BindAddr is
	// 0.0.0.0.
	AdvertiseAddr string `yaml:"advertise_addr"`
	// AdvertisePort is the port the other gateways reach this one at.
	// Default: BindPort.
	AdvertisePort int `yaml:"advertise_port"`
	// Seeds are the gossip addresses (host:port) of gateways to join; one
	// that answers is enough. A list may name this gateway itself (a
	// fleet may share one list). A gateway with seeds answers its gossip
	// rules by their failure mode (on_error) until it has exchanged state
	// with one of them: see rules.Rule.Consistency.
	Seeds []string `yaml:"seeds"`
	// Interval is the gossip round: every interval a gateway sends the
	// counters changed since the last round. Default 100ms; at least
	// 10ms. A key can be admitted beyond its limit by about gateways ×
	// requests per gateway per second × interval.
	Interval time.Duration `yaml:"interval"`
	// Fanout is how many gateways, picked at random, receive each round;
	// they relay what was new to them. Default 0: every gateway, directly
	// (best below a hundred gateways).
	Fanout int `yaml:"fanout"`
	// MessageBytes caps one gossip packet, in bytes. Default 1400 (one
	// UDP packet); from 256 to 65000.
	MessageBytes int `yaml:"message_bytes"`
	// RoundBytes caps what one round sends each gateway, in bytes, the
	// hottest keys first; the rest wait for the next round. Default 1 MiB.
	RoundBytes int `yaml:"round_bytes"`
	// PushPullInterval is the period of the full state exchange with a
	// random gateway, which repairs whatever gossip lost. Default 10s.
	PushPullInterval time.Duration `yaml:"push_pull_interval"`
	// MaxKeys bounds the keys held, this gateway's and its peers'.
	// Default 65,536. When full, a new key takes the place of an idle
	// key or of the least recently used key not being limited, as in the
	// memory store (tollgate_gossip_evictions_total): a flood of new
	// clients locks nobody out and frees no client held at its limit.
	MaxKeys int `yaml:"max_keys"`
	// MaxStateBytes caps what one gossip stream (TCP: a gateway's full
	// state, in a push/pull) may announce before it is authenticated, in
	// bytes: a stream announcing more is closed unread and counted
	// (tollgate_gossip_dropped_total{reason="oversize"}). Default 8 MiB
	// (about 100 bytes for each of 65,536 keys counted by three
	// gateways); at most 20 MiB. A gateway whose own state is larger logs
	// it: raise it with max_keys.
	MaxStateBytes int `yaml:"max_state_bytes"`
	// StateBytesInFlight caps what all the gossip streams being read at
	// once may announce, in bytes: a stream that would go over it is
	// closed unread and counted (reason="busy"), and its gateway tries
	// again at its next push/pull. With 128 streams at most, this bounds
	// the memory a stranger can make a gateway spend on its gossip port.
	// Default twice max_state_bytes; at least max_state_bytes.
	StateBytesInFlight int `yaml:"state_bytes_in_flight"`
	// SecretKey encrypts and authenticates all gossip (AES-GCM): 16, 24
	// or 32 bytes, written in hex (32, 48 or 64 hex digits) or base64,
	// the same on every gateway. With a key, gossip not sealed with it is
	// dropped and counted (tollgate_gossip_dropped_total{reason="key"}):
	// a gateway without the key can neither join nor inject counts.
	// Shown masked wherever the config is shown. Give at most one of
	// secret_key, secret_key_file and secret_key_env; none means
	// plaintext gossip, for a trusted network only.
	SecretKey string `yaml:"secret_key"`
	// SecretKeyFile is a file holding the secret key (hex or base64,
	// surrounding white space ignored); a relative path is resolved
	// against the configuration file's directory. It must be a regular
	// file (or a link to one) of at most 4 KiB: a device, a named pipe or
	// a larger file is refused at load.
	SecretKeyFile string `yaml:"secret_key_file"`
	// SecretKeyEnv is the name of an environment variable holding the
	// secret key (hex or base64).
	SecretKeyEnv string `yaml:"secret_key_env"`
	// Key is the secret key ReadKey read from SecretKey, SecretKeyFile
	// or SecretKeyEnv (nil when none is given), or the key itself for a
	// Config built in code. Never shown.
	Key []byte `yaml:"-" json:"-"`
}

// Defaults and bounds.
const (
	// DefaultPort is BindPort's default, memberlist's customary port.
	DefaultPort = 7946
	// DefaultInterval is Interval's default.
	DefaultInterval = 100 * time.Millisecond
	// MinInterval is the shortest Interval: a round walks the changed
	// keys and sends to every member, so a tiny one spins a core.
	MinInterval = 10 * time.Millisecond
	// DefaultMessageBytes is MessageBytes' default (one UDP packet).
	DefaultMessageBytes = 1400
	// MinMessageBytes and MaxMessageBytes bound MessageBytes.
	MinMessageBytes, MaxMessageBytes = 256, 65000
	// DefaultRoundBytes is RoundBytes' default.
	DefaultRoundBytes = 1 << 20
	// DefaultPushPullInterval is PushPullInterval's default.
	DefaultPushPullInterval = 10 * time.Second
	// DefaultMaxKeys is MaxKeys' default.
	DefaultMaxKeys = 1 << 16
	// DefaultMaxStateBytes is MaxStateBytes' default.
	DefaultMaxStateBytes = 8 << 20
	// MaxStateBytesLimit is the largest MaxStateBytes: memberlist's own
	// bound on a stream.
	MaxStateBytesLimit = 20 << 20
)

// Defaults fills c's zero fields with their documented defaults.
func (c *Config) Defaults() {
	if c.Name == "" {
		if h, err := os.Hostname(); err == nil {
			c.Name = h
		}
	}
	if c.BindAddr == "" {
		c.BindAddr = "127.0.0.1"
	}
	if c.BindPort == nil {
		p := DefaultPort
		c.BindPort = &p
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
}

// Port returns the port BindPort gives: 0 (a free one) when it is nil.
func (c *Config) Port() int {
	if c.BindPort == nil {
		return 0
	}
	return *c.BindPort
}

// Validate reports every problem with c, the section at path at
// ("store.gossip"), each a *fielderr.Error naming its key by its path
// ("store.gossip.bind_addr"), or nil. It changes nothing; no message
// quotes the key or any part of it.
func (c *Config) Validate(at string) error {
	return c.Check(at, func(key string) string { return at + "." + key })
}

// Check is Validate with each key named in messages by name(key) (its
// path in Validate; store/gossip names them in words), each error's Path
// still under at.
func (c *Config) Check(at string, name func(key string) string) error {
	var l fielderr.List
	add := func(key, format string, args ...any) {
		l.Add(at+"."+key, "%s"+format, append([]any{name(key)}, args...)...)
	}
	if c.BindAddr != "" && net.ParseIP(c.BindAddr) == nil {
		add("bind_addr", " %q: want an IP address such as 10.0.0.5 or 0.0.0.0", c.BindAddr)
	}
	if p := c.BindPort; p != nil && (*p < 0 || *p > 65535) {
		add("bind_port", " %d: want a port from 0 to 65535", *p)
	}
	if c.AdvertiseAddr != "" && net.ParseIP(c.AdvertiseAddr) == nil {
		add("advertise_addr", " %q: want an IP address", c.AdvertiseAddr)
	}
	if c.AdvertisePort < 0 || c.AdvertisePort > 65535 {
		add("advertise_port", " %d: want a port from 0 to 65535", c.AdvertisePort)
	}
	for i, s := range c.Seeds {
		if _, port, err := net.SplitHostPort(s); err != nil || !fielderr.ValidPort(port) {
			add("seeds", "[%d] %q: want host:port, the port from 1 to 65535", i, s)
		}
	}
	if c.Interval > 0 && c.Interval < MinInterval {
		add("interval", " %v is below the least value of %v", c.Interval, MinInterval)
	}
	if c.Interval < 0 {
		add("interval", " %v must not be negative", c.Interval)
	}
	if c.Fanout < 0 {
		add("fanout", " %d must not be negative", c.Fanout)
	}
	if c.MessageBytes != 0 && (c.MessageBytes < MinMessageBytes || c.MessageBytes > MaxMessageBytes) {
		add("message_bytes", " %d: want %d to %d", c.MessageBytes, MinMessageBytes, MaxMessageBytes)
	}
	if c.RoundBytes < 0 {
		add("round_bytes", " %d must not be negative", c.RoundBytes)
	}
	if c.PushPullInterval < 0 {
		add("push_pull_interval", " %v must not be negative", c.PushPullInterval)
	}
	if c.MaxKeys < 0 {
		add("max_keys", " %d must not be negative", c.MaxKeys)
	}
	if c.MaxStateBytes < 0 || c.MaxStateBytes > MaxStateBytesLimit {
		add("max_state_bytes", " %d: want 0 to %d (20 MiB, memberlist's bound)", c.MaxStateBytes, MaxStateBytesLimit)
	}
	if c.StateBytesInFlight < 0 || (c.StateBytesInFlight > 0 && c.StateBytesInFlight < c.MaxStateBytes) {
		add("state_bytes_in_flight", " %d: want at least max_state_bytes (%d)", c.StateBytesInFlight, c.MaxStateBytes)
	}
	if n := len(c.Key); n != 0 && n != 16 && n != 24 && n != 32 {
		add("secret_key", ": the secret key is %d bytes, want 16, 24 or 32", n)
	}
	return l.Err()
}

// ReadKey reads c's secret key, from the one of secret_key,
// secret_key_file (resolve gives its path: relative to the configuration
// file's directory) and secret_key_env given, into Key: the loading step,
// between Defaults and Validate. Its error, a *fielderr.Error at the key
// it came from under at ("store.gossip"), never quotes the key.
func (c *Config) ReadKey(at string, resolve func(string) string) error {
	key, field, err := c.readKey(resolve)
	if err != nil {
		return &fielderr.Error{Path: at + "." + field, Msg: fmt.Sprintf("%s.%s: %v", at, field, err)}
	}
	c.Key = key
	return nil
}

func (c *Config) readKey(resolve func(string) string) ([]byte, string, error) {
	var given []string
	for _, f := range []struct{ name, v string }{
		{"secret_key", c.SecretKey}, {"secret_key_file", c.SecretKeyFile}, {"secret_key_env", c.SecretKeyEnv},
	} {
		if f.v != "" {
			given = append(given, f.name)
		}
	}
	switch {
	case len(given) == 0:
		return nil, "", nil
	case len(given) > 1:
		return nil, given[1], fmt.Errorf("give one of %s, not both", strings.Join(given, " and "))
	}
	var text string
	switch given[0] {
	case "secret_key":
		text = c.SecretKey
	case "secret_key_file":
		b, err := stableread.ReadRegular(resolve(c.SecretKeyFile), MaxSecretKeyFileBytes)
		if err != nil {
			return nil, given[0], err
		}
		text = string(b)
	case "secret_key_env":
		v, ok := os.LookupEnv(c.SecretKeyEnv)
		if !ok || strings.TrimSpace(v) == "" {
			return nil, given[0], fmt.Errorf("environment variable %s is not set", c.SecretKeyEnv)
		}
		text = v
	}
	key, err := ParseSecretKey(text)
	return key, given[0], err
}

// errKeyFormat is the one error of a key that does not decode: it never
// quotes the text.
var errKeyFormat = errors.New("the secret key is neither hex (32, 48 or 64 hex digits) nor base64 of 16, 24 or 32 bytes")

// ParseSecretKey decodes a gossip secret key written in hex (32, 48 or 64
// hex digits) or base64 (standard or URL alphabet, padded or not), white
// space around it ignored. The key is 16, 24 or 32 bytes (AES-128, -192,
// -256). Its errors never quote the text.
func ParseSecretKey(text string) ([]byte, error) {
	text = strings.TrimSpace(text)
	if n := len(text); n == 32 || n == 48 || n == 64 {
		if b, err := hex.DecodeString(text); err == nil {
			return b, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(text)
		if err != nil {
			continue
		}
		if n := len(b); n == 16 || n == 24 || n == 32 {
			return b, nil
		}
		return nil, fmt.Errorf("the secret key is %d bytes, want 16, 24 or 32", len(b))
	}
	return nil, errKeyFormat
}
