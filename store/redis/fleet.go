package redis

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Fleet shares the factors of adaptive controllers between the gateways
// of a fleet through this Redis (it implements adaptive.Fleet): each node
// publishes its factor for a controller in one hash per controller,
// PREFIX{adaptive:NAME}, field NODE, value "FACTOR UNIXMS"; each reads
// the hash and takes the lowest recent factor. Entries are judged by the
// publishing node's clock: nodes whose clocks differ by more than the
// freshness window (three intervals) see each other's entries as stale.
// The hash expires an hour after the last publication.
type Fleet struct {
	s    *Store
	node string
}

// Fleet returns the fleet view of this store for the node named node
// (unique in the fleet: a host name and process id, say).
func (s *Store) Fleet(node string) *Fleet { return &Fleet{s: s, node: node} }

// fleetTTL is how long a controller's hash outlives its last
// publication.
const fleetTTL = time.Hour

// ErrFleetEntry reports a fleet hash entry that is not "FACTOR UNIXMS".
var ErrFleetEntry = errors.New("redis: malformed fleet entry")

func (f *Fleet) key(name string) string { return f.s.cfg.Prefix + "{adaptive:" + name + "}" }

func (f *Fleet) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, max(f.s.cfg.Timeout, 100*time.Millisecond))
}

// Publish records this node's factor (permille) for the controller name.
func (f *Fleet) Publish(ctx context.Context, name string, factor int64, now time.Time) error {
	c, err := f.s.client()
	if err != nil {
		return err
	}
	ctx, cancel := f.ctx(ctx)
	defer cancel()
	k := f.key(name)
	v := strconv.FormatInt(factor, 10) + " " + strconv.FormatInt(now.UnixMilli(), 10)
	for _, r := range c.DoMulti(ctx,
		c.B().Hset().Key(k).FieldValue().FieldValue(f.node, v).Build(),
		c.B().Pexpire().Key(k).Milliseconds(fleetTTL.Milliseconds()).Build(),
	) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

// Lowest returns the lowest factor published for name at most maxAge
// before now, and false when there is none. Malformed entries are
// skipped; the error then reports them (with the lowest of the others).
func (f *Fleet) Lowest(ctx context.Context, name string, now time.Time, maxAge time.Duration) (int64, bool, error) {
	c, err := f.s.client()
	if err != nil {
		return 0, false, err
	}
	ctx, cancel := f.ctx(ctx)
	defer cancel()
	m, err := c.Do(ctx, c.B().Hgetall().Key(f.key(name)).Build()).AsStrMap()
	if err != nil {
		return 0, false, err
	}
	low, ok, bad := int64(0), false, 0
	oldest := now.Add(-maxAge).UnixMilli()
	for _, v := range m {
		factor, at, good := ParseFleetEntry(v)
		if !good {
			bad++
			continue
		}
		if at >= oldest && (!ok || factor < low) {
			low, ok = factor, true
		}
	}
	if bad > 0 {
		return low, ok, ErrFleetEntry
	}
	return low, ok, nil
}

// ParseFleetEntry reads a fleet hash value, "FACTOR UNIXMS" with a
// factor from 1 to 1000.
func ParseFleetEntry(v string) (factor, unixMS int64, ok bool) {
	a, b, found := strings.Cut(v, " ")
	if !found {
		return 0, 0, false
	}
	factor, err1 := strconv.ParseInt(a, 10, 64)
	unixMS, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || factor < 1 || factor > 1000 {
		return 0, 0, false
	}
	return factor, unixMS, true
}
