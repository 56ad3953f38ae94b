package stores

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/gossip"
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
	mode  string
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
	case rules.OnErrorOpen:
		v.cold.open.Add(1)
	case rules.OnErrorClosed:
		v.cold.closed.Add(1)
	default:
		v.cold.local.Add(1)
	}
}

// gossipConfig translates the file's gossip section (defaults filled by
// config.Parse). log, when not nil, receives memberlist's warnings and
// errors (they name nodes and addresses, never keys).
func gossipConfig(g *config.GossipStore, log *slog.Logger) gossip.Config {
	gc := gossip.Config{
		Name:             g.Name,
		BindAddr:         g.BindAddr,
		AdvertiseAddr:    g.AdvertiseAddr,
		AdvertisePort:    g.AdvertisePort,
		Seeds:            g.Seeds,
		SecretKey:        g.Key,
		Interval:         g.Interval,
		Fanout:           g.Fanout,
		MessageBytes:     g.MessageBytes,
		RoundBytes:       g.RoundBytes,
		PushPullInterval: g.PushPullInterval,
		MaxKeys:          g.MaxKeys,
	}
	if g.BindPort != nil {
		gc.BindPort = *g.BindPort
	}
	if log != nil {
		gc.Log = memberlistLog{log}
	}
	return gc
}

// memberlistLog passes memberlist's [WARN] and [ERR] lines to a logger
// and drops the rest ([DEBUG], [INFO]: one per probe).
type memberlistLog struct{ log *slog.Logger }

func (l memberlistLog) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(bytes.TrimRight(p, "\n")))
	switch {
	case strings.Contains(line, "[ERR]"):
		l.log.Error("gossip", slog.String("memberlist", line))
	case strings.Contains(line, "[WARN]"):
		l.log.Warn("gossip", slog.String("memberlist", line))
	}
	return len(p), nil
}
