package redis

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/store/redis/redisconf"
)

// Config configures a Store. Only Addrs is required; every other field has a
// documented zero-value default.
type Config struct {
	// Addrs are "host:port" addresses of a standalone Redis or of some
	// nodes of a Redis Cluster (the client discovers the rest and detects
	// which it is), or, with MasterName, of the Redis Sentinels.
	Addrs []string
	// MasterName, when set, is the master set the Sentinels at Addrs
	// monitor: the store connects to its current master and follows
	// failovers (Sentinel's +switch-master, and a look every second in
	// case one is missed). Decisions during the switch follow the
	// failure mode.
	MasterName string
	// Username and Password authenticate (AUTH, an ACL user when
	// Username is set); empty means none. Sentinels are asked without
	// AUTH. The password never appears in the store's errors or logs.
	Username, Password string
	// TLS, when not nil, encrypts every connection (to Redis, to each
	// Cluster node, to the Sentinels and the master they name) with it;
	// see redisconf.TLSFiles to build one. Nil: plain TCP.
	TLS *tls.Config
	// DB is the database SELECTed on a standalone server; 0 by default.
	DB int
	// Prefix is prepended to every key. Zero means "tollgate:". It must not
	// contain '{' or '}'.
	Prefix string
	// Clock returns the time in Unix nanoseconds, read in whole
	// microseconds. Nil (the default) means the Redis server's TIME, so
	// every gateway sharing the server agrees whatever its own clock.
	Clock func() int64
	// MinTTL is, when Clock is set, the least time to live of a key (an
	// injected clock need not run at real speed). Zero means 10s.
	MinTTL time.Duration
	// Timeout bounds each round trip to Redis. Zero means redisconf.DefaultTimeout. Callers
	// whose context cannot be cancelled share one deadline per tenth of
	// the timeout, so a round trip is abandoned after between Timeout and
	// 1.1×Timeout.
	Timeout time.Duration
	// OnFailure is the answer when Redis fails, times out or the breaker
	// is open, for Apply and ApplyAll; WithFailure chooses it per rule.
	// Unset means failmode.Default (local).
	OnFailure failmode.Mode
	// BreakerFailures is how many consecutive failures open the circuit
	// breaker. Zero means 5.
	BreakerFailures int
	// BreakerCooldown is how long the breaker stays open before a probe
	// (a background PING) tests Redis again. Zero means 200ms.
	BreakerCooldown time.Duration
	// CacheSize bounds the over-limit cache's entries. Zero means 65,536;
	// negative disables the cache.
	CacheSize int
	// FlushDelay is how long the client's writer may wait after a flush
	// to gather more concurrent decisions into the next one (rueidis's
	// MaxFlushDelay): fewer, larger writes cost Redis and the gateway less
	// CPU under load, for at most this much added latency. Zero means
	// 20µs; negative means no wait.
	FlushDelay time.Duration
	// LocalMaxKeys bounds the in-memory store failmode.Local decides with.
	// Zero means 65,536.
	LocalMaxKeys int
	// Logger, when set, receives one line per change of the store's
	// state (connected; not reachable; breaker opened; breaker closed)
	// and the error replies Redis gives, at most one line per kind every
	// 10s plus a count of the others. Keys are hashed (package
	// internal/redact), never written raw. Nil: no logs.
	Logger *slog.Logger
}

// Validate reports every problem with c.
func (c Config) Validate() error {
	var errs []error
	if len(c.Addrs) == 0 {
		errs = append(errs, errors.New("redis: Addrs is empty"))
	}
	if strings.ContainsAny(c.Prefix, "{}") {
		errs = append(errs, fmt.Errorf("redis: Prefix %q must not contain '{' or '}'", c.Prefix))
	}
	if c.Timeout < 0 || c.MinTTL < 0 || c.BreakerCooldown < 0 {
		errs = append(errs, errors.New("redis: Timeout, MinTTL and BreakerCooldown must not be negative"))
	}
	if c.BreakerFailures < 0 || c.LocalMaxKeys < 0 {
		errs = append(errs, errors.New("redis: BreakerFailures and LocalMaxKeys must not be negative"))
	}
	if c.OnFailure != failmode.Unset && !c.OnFailure.Known() {
		errs = append(errs, fmt.Errorf("redis: unknown OnFailure %q (want %s)", c.OnFailure, failmode.Words))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = "tollgate:"
	}
	if c.MinTTL == 0 {
		c.MinTTL = 10 * time.Second
	}
	if c.Timeout == 0 {
		c.Timeout = redisconf.DefaultTimeout
	}
	if c.BreakerFailures == 0 {
		c.BreakerFailures = 5
	}
	if c.BreakerCooldown == 0 {
		c.BreakerCooldown = 200 * time.Millisecond
	}
	if c.CacheSize == 0 {
		c.CacheSize = 1 << 16
	}
	if c.FlushDelay == 0 {
		c.FlushDelay = 20 * time.Microsecond
	}
	if c.LocalMaxKeys == 0 {
		c.LocalMaxKeys = 1 << 16
	}
	return c
}
