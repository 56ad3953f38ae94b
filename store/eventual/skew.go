package eventual

import (
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// clockKey is the key a sync with nothing to push reads (a zero charge,
// which writes nothing) to measure the skew all the same.
const clockKey = "eventual:clock"

// clockProbe is clockKey's policy: any will do, a zero charge only reads.
var clockProbe = limit.FixedWindow{Limit: 1, Window: time.Second}

// skew returns the offset from the local clock to Redis's that the charges
// of a sync sent at local time t0 and answered by t1 imply: each charge was
// applied at its Now, between t0 and t1 on Redis's clock, so the offset is
// at least Now−t1 and at most Now−t0 for every charge. It returns the
// middle of that range, off by at most half the round trip, and false when
// no charge was applied.
func skew(charges []redis.Charge, t0, t1 int64) (int64, bool) {
	var lo, hi int64
	ok := false
	for _, c := range charges {
		if c.Err != nil || c.Now == 0 {
			continue
		}
		if !ok {
			lo, hi, ok = c.Now-t1, c.Now-t0, true
			continue
		}
		lo, hi = max(lo, c.Now-t1), min(hi, c.Now-t0)
	}
	if lo > hi { // a clock stepped during the round trip
		lo, hi = hi, lo
	}
	return lo + (hi-lo)/2, ok
}
