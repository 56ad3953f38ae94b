package adaptive

import (
	"context"
	"time"
)

// Board is a fleet-wide board of named values from 0 to 1, one entry per
// node and name, each stamped by its publisher (store/gossip's Store
// implements it, over memberlist).
type Board interface {
	// PublishValue records this node's value for name, stamped at, and
	// sends it to the fleet.
	PublishValue(name string, v float64, at time.Time) error
	// LowestValue returns the lowest value any node published for name
	// stamped at since or later, and false when none was.
	LowestValue(name string, since time.Time) (float64, bool)
}

// BoardFleet shares factors through a Board (gossip): each node publishes
// its factor for controller NAME as the value "adaptive:NAME" (the
// factor in permille over 1000) and reads the lowest fresh one, as the
// Redis fleet does with its hash: entries are judged by the publishing
// node's clock, and a node that stopped publishing drops out once its
// entry is older than the freshness window.
type BoardFleet struct{ b Board }

// NewBoardFleet returns the fleet view of b.
func NewBoardFleet(b Board) *BoardFleet { return &BoardFleet{b: b} }

func boardName(name string) string { return "adaptive:" + name }

// Publish records this node's factor (permille) for the controller name.
func (f *BoardFleet) Publish(_ context.Context, name string, factor int64, now time.Time) error {
	return f.b.PublishValue(boardName(name), float64(min(max(factor, 0), Base))/Base, now)
}

// Lowest returns the lowest factor published for name at most maxAge
// before now, and false when there is none.
func (f *BoardFleet) Lowest(_ context.Context, name string, now time.Time, maxAge time.Duration) (int64, bool, error) {
	v, ok := f.b.LowestValue(boardName(name), now.Add(-maxAge))
	if !ok {
		return 0, false, nil
	}
	return int64(v*Base + 0.5), true, nil
}
