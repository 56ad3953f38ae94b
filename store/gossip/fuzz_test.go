package gossip

import (
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// FuzzDecode checks that any input decodes or is refused, never panics,
// and that what decodes holds only counts within bounds, which merge into
// a view without a negative or wrapped sum, and a stamp within MaxSkew.
func FuzzDecode(f *testing.F) {
	w := testNow / testShape.period
	f.Add(encodeOne("k", testShape, counter{Win: w, Cur: 5, Prev: 7}, counter{Win: w - 1, Cur: 3}))
	f.Add(encodeOne("tb", shape{alg: limit.AlgTokenBucket, period: int64(time.Minute), limit: 10}, counter{Win: w, Cur: 2, MCur: 5000}))
	f.Add([]byte{1, 1, 0, 0, 0, 0})
	f.Add([]byte{1, 2, 0, 0, 0, 2, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decode(b, testNow)
		if err != nil {
			return
		}
		if d := m.stamp - testNow; m.stamp != 0 && (d > int64(MaxSkew) || d < -int64(MaxSkew)) {
			t.Fatalf("stamp %v from now decoded", time.Duration(d))
		}
		for _, e := range m.entries {
			var v view
			for _, c := range m.counters[e.lo:e.hi] {
				if c.node < 0 || c.node >= len(m.nodes) {
					t.Fatalf("node index %d of %d", c.node, len(m.nodes))
				}
				if c.c.Cur < 0 || c.c.Prev < 0 || c.c.Cur > countFactor*e.shape.limit || c.c.Prev > countFactor*e.shape.limit {
					t.Fatalf("count out of bounds: %+v (limit %d)", c.c, e.shape.limit)
				}
				v.add(c.c, c.c.Win)
			}
			if v.cur < 0 || v.prev < 0 {
				t.Fatalf("negative view %+v", v)
			}
			if !gossipable(e.shape.alg) || e.shape.period <= 0 || e.shape.limit <= 0 {
				t.Fatalf("shape %+v", e.shape)
			}
			sh := e.shape
			sh.state(v, 0, testNow) // must not panic
		}
	})
}
