package storeopen

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/logthrottle"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/gossip"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
)

// ColdDecisions counts the decisions of gossip rules answered by their
// failure mode because this gateway was not warm yet, by mode.
type ColdDecisions struct {
	// Open were allowed, Closed refused, Local decided in this gateway
	// alone.
	Open, Closed, Local uint64
}

type coldCounts struct{ open, closed, local atomic.Uint64 }

// gossipView is the gossip store as a rule with failure mode mode sees
// it: until the gateway is warm (gossip.ErrNotWarm), a rule whose mode
// is local decides on local, the in-process store, alone (those counts
// are never gossiped); open and closed return the error, which the rule
// engine answers by the mode (allow, refuse). Views of one mode are
// equal, so the engine charges the gossip rules of one mode together.
type gossipView struct {
	g     *gossip.Store
	mode  failmode.Mode
	local limit.Store // nil unless mode is local
	cold  *coldCounts
}

// Apply implements limit.Store.
func (v gossipView) Apply(ctx context.Context, key string, p limit.Policy, cost int64) (limit.Decision, error) {
	d, err := v.g.Apply(ctx, key, p, cost)
	if err != nil && errors.Is(err, gossip.ErrNotWarm) {
		v.countCold()
		if v.local != nil {
			return v.local.Apply(ctx, key, p, cost)
		}
	}
	return d, err
}

// ApplyAll implements limit.Store.
func (v gossipView) ApplyAll(ctx context.Context, reqs []limit.Request) (limit.Decision, error) {
	d, err := v.g.ApplyAll(ctx, reqs)
	if err != nil && errors.Is(err, gossip.ErrNotWarm) {
		v.countCold()
		if v.local != nil {
			return v.local.ApplyAll(ctx, reqs)
		}
	}
	return d, err
}

func (v gossipView) countCold() {
	switch v.mode {
	case failmode.Open:
		v.cold.open.Add(1)
	case failmode.Closed:
		v.cold.closed.Add(1)
	default:
		v.cold.local.Add(1)
	}
}

// gossipConfig is the gossip node's configuration: the file's gossip
// section itself (defaults filled and key read by config.Parse), and log,
// when not nil, receiving memberlist's warnings and errors (they name
// nodes and addresses, never keys).
func gossipConfig(g *gossipconf.Config, log *slog.Logger) gossip.Config {
	gc := gossip.Config{Config: *g}
	if log != nil {
		gc.Log = newMemberlistLog(log, gossipLogEvery, nil)
	}
	return gc
}

// gossipLogEvery is the window of memberlistLog's throttling.
const gossipLogEvery = 10 * time.Second

// memberlistLog passes memberlist's (and the gossip node's own) [WARN]
// and [ERR] lines to a logger and drops the rest ([DEBUG], [INFO]: one
// per probe). Lines that come once per packet or stream a peer sends (a
// packet not sealed with the key, a stream refused) are throttled by
// internal/logthrottle: the first line of a kind in a window is written,
// the rest counted in one summary line when the window ends. A line's
// kind is its level and its first words (memberlistKind), what says what
// went wrong, not who sent it.
type memberlistLog struct{ l *logthrottle.Logger }

// newMemberlistLog writes to log at most one line of a kind per every;
// now nil means the real clock.
func newMemberlistLog(log *slog.Logger, every time.Duration, now func() time.Time) memberlistLog {
	return memberlistLog{logthrottle.New(log, logthrottle.Config{Every: every, Now: now})}
}

func (l memberlistLog) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(bytes.TrimRight(p, "\n")))
	var level slog.Level
	switch {
	case strings.Contains(line, "[ERR]"):
		level = slog.LevelError
	case strings.Contains(line, "[WARN]"):
		level = slog.LevelWarn
	default:
		return len(p), nil
	}
	l.l.LogKind(context.Background(), level, memberlistKind(line), "gossip", slog.String("memberlist", line))
	return len(p), nil
}

// memberlistKind is the kind of a memberlist line: its level and the
// first three words of its message, digits dropped ("[ERR] failed to
// receive:", "[WARN] stream refused (oversize):"). What follows them
// (errors, addresses, node names a peer chose) does not make a new kind,
// so a peer cannot write a line per packet by varying them.
func memberlistKind(line string) string {
	level, msg, _ := strings.Cut(line, "] ")
	for _, prefix := range []string{"memberlist: ", "gossip: "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	words := strings.Fields(msg)
	words = words[:min(len(words), 3)]
	kind := level + "] " + strings.Join(words, " ")
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, kind)
}
