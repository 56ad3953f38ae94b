package limit

import (
	"math/rand"
	"testing"
	"time"
)

// TestSlidingLogAdmitMatchesDecideLog runs Admit and DecideLog side by side
// on two logs over random sequences (costs of zero and above the limit,
// bursts, idle gaps, the clock going back) and checks that every answer
// and the two logs agree.
func TestSlidingLogAdmitMatchesDecideLog(t *testing.T) {
	rng := rand.New(rand.NewSource(27))
	for round := 0; round < 200; round++ {
		p := SlidingLog{Limit: 1 + rng.Int63n(20), Window: time.Duration(1+rng.Int63n(1000)) * time.Millisecond}
		var a, b Log
		now := int64(rng.Int63n(1e12))
		for i := 0; i < 500; i++ {
			switch r := rng.Intn(10); {
			case r < 6:
				now += rng.Int63n(int64(p.Window) / 8)
			case r < 8:
				now += rng.Int63n(2 * int64(p.Window))
			case r < 9:
				now -= rng.Int63n(int64(p.Window) / 4) // the clock goes back
			}
			cost := rng.Int63n(4)
			if rng.Intn(40) == 0 {
				cost = p.Limit + 1 + rng.Int63n(3)
			}
			d := p.DecideLog(&a, now, cost)
			allowed, used := p.Admit(&b, now, cost)
			if allowed != d.Allowed || used != d.Limit-d.Remaining {
				t.Fatalf("%v round %d step %d (now %d, cost %d): Admit = (%v, %d), DecideLog allowed %v, limit-remaining %d",
					p, round, i, now, cost, allowed, used, d.Allowed, d.Limit-d.Remaining)
			}
			if a.Len() != b.Len() || a.Sum() != b.Sum() || a.IdleAt() != b.IdleAt() {
				t.Fatalf("%v round %d step %d: logs differ: DecideLog's len %d sum %d idle %d, Admit's len %d sum %d idle %d",
					p, round, i, a.Len(), a.Sum(), a.IdleAt(), b.Len(), b.Sum(), b.IdleAt())
			}
			if rng.Intn(30) == 0 && d.Allowed && cost > 0 {
				a.Rollback()
				b.Rollback()
			}
		}
	}
}
