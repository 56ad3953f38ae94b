package config

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/store/gossip"
)

// Gossip defaults and bounds.
const (
	// DefaultGossipPort is store.gossip.bind_port's default, memberlist's
	// customary port.
	DefaultGossipPort = 7946
	// minGossipInterval is the shortest store.gossip.interval: a round
	// walks the changed keys and sends to every member, so a tiny one
	// spins a core.
	minGossipInterval = 10 * time.Millisecond
)

// gossipDefaults fills g's zero fields.
func gossipDefaults(g *GossipStore) {
	if g.Name == "" {
		if h, err := os.Hostname(); err == nil {
			g.Name = h
		}
	}
	if g.BindAddr == "" {
		g.BindAddr = "127.0.0.1"
	}
	if g.BindPort == nil {
		p := DefaultGossipPort
		g.BindPort = &p
	}
	if g.Interval == 0 {
		g.Interval = gossip.DefaultInterval
	}
	if g.MessageBytes == 0 {
		g.MessageBytes = gossip.DefaultMessageBytes
	}
	if g.RoundBytes == 0 {
		g.RoundBytes = gossip.DefaultRoundBytes
	}
	if g.PushPullInterval == 0 {
		g.PushPullInterval = gossip.DefaultPushPullInterval
	}
	if g.MaxKeys == 0 {
		g.MaxKeys = gossip.DefaultMaxKeys
	}
	if g.MaxStateBytes == 0 {
		g.MaxStateBytes = gossip.DefaultMaxStateBytes
	}
	if g.StateBytesInFlight == 0 {
		g.StateBytesInFlight = 2 * g.MaxStateBytes
	}
}

// validateGossip checks store.gossip and reads its secret key into Key.
// No message quotes the key or any part of it.
func (c *Config) validateGossip(ps *problems) {
	g := c.Store.Gossip
	if g == nil {
		return
	}
	const at = "store.gossip."
	if g.BindAddr != "" && net.ParseIP(g.BindAddr) == nil {
		ps.add(c.at(at+"bind_addr"), "store.gossip.bind_addr %q: want an IP address such as 10.0.0.5 or 0.0.0.0", g.BindAddr)
	}
	if p := g.BindPort; p != nil && (*p < 0 || *p > 65535) {
		ps.add(c.at(at+"bind_port"), "store.gossip.bind_port %d: want a port from 0 to 65535", *p)
	}
	if g.AdvertiseAddr != "" && net.ParseIP(g.AdvertiseAddr) == nil {
		ps.add(c.at(at+"advertise_addr"), "store.gossip.advertise_addr %q: want an IP address", g.AdvertiseAddr)
	}
	if g.AdvertisePort < 0 || g.AdvertisePort > 65535 {
		ps.add(c.at(at+"advertise_port"), "store.gossip.advertise_port %d: want a port from 0 to 65535", g.AdvertisePort)
	}
	for i, s := range g.Seeds {
		if _, port, err := net.SplitHostPort(s); err != nil || !validPort(port) {
			ps.add(c.at(at+"seeds"), "store.gossip.seeds[%d] %q: want host:port, the port from 1 to 65535", i, s)
		}
	}
	checkMin(ps, c.at(at+"interval"), at+"interval", g.Interval, minGossipInterval)
	if g.Fanout < 0 {
		ps.add(c.at(at+"fanout"), "store.gossip.fanout %d must not be negative", g.Fanout)
	}
	if g.MessageBytes != 0 && (g.MessageBytes < 256 || g.MessageBytes > 65000) {
		ps.add(c.at(at+"message_bytes"), "store.gossip.message_bytes %d: want 256 to 65000", g.MessageBytes)
	}
	if g.RoundBytes < 0 {
		ps.add(c.at(at+"round_bytes"), "store.gossip.round_bytes %d must not be negative", g.RoundBytes)
	}
	if g.PushPullInterval < 0 {
		ps.add(c.at(at+"push_pull_interval"), "store.gossip.push_pull_interval %v must not be negative", g.PushPullInterval)
	}
	if g.MaxKeys < 0 {
		ps.add(c.at(at+"max_keys"), "store.gossip.max_keys %d must not be negative", g.MaxKeys)
	}
	if g.MaxStateBytes < 0 || g.MaxStateBytes > gossip.MaxStateBytesLimit {
		ps.add(c.at(at+"max_state_bytes"), "store.gossip.max_state_bytes %d: want 0 to %d (20 MiB, memberlist's bound)", g.MaxStateBytes, gossip.MaxStateBytesLimit)
	}
	if g.StateBytesInFlight < 0 || (g.StateBytesInFlight > 0 && g.StateBytesInFlight < g.MaxStateBytes) {
		ps.add(c.at(at+"state_bytes_in_flight"), "store.gossip.state_bytes_in_flight %d: want at least max_state_bytes (%d)", g.StateBytesInFlight, g.MaxStateBytes)
	}
	key, field, err := c.gossipKey(g)
	if err != nil {
		ps.add(c.at(at+field), "store.gossip.%s: %v", field, err)
		return
	}
	g.Key = key
}

// gossipKey reads g's secret key from the one of secret_key,
// secret_key_file and secret_key_env given, and returns the field it came
// from. Its errors never quote the key.
func (c *Config) gossipKey(g *GossipStore) ([]byte, string, error) {
	var given []string
	for _, f := range []struct{ name, v string }{
		{"secret_key", g.SecretKey}, {"secret_key_file", g.SecretKeyFile}, {"secret_key_env", g.SecretKeyEnv},
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
		text = g.SecretKey
	case "secret_key_file":
		b, err := os.ReadFile(c.Resolve(g.SecretKeyFile))
		if err != nil {
			return nil, given[0], err
		}
		text = string(b)
	case "secret_key_env":
		v, ok := os.LookupEnv(g.SecretKeyEnv)
		if !ok || strings.TrimSpace(v) == "" {
			return nil, given[0], fmt.Errorf("environment variable %s is not set", g.SecretKeyEnv)
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
