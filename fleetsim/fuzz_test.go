package fleetsim

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// FuzzFleet feeds a fleet requests decoded from arbitrary bytes (keys
// and times from a log are untrusted): any keys, times out of order,
// zero and large costs. No tier may panic, and each tier's decisions must
// add up to the exact counter's: admitted − overshoot + false refusals.
func FuzzFleet(f *testing.F) {
	f.Add([]byte("\x01\x00a\x02\x10b\x01\xffc"), uint8(3), uint8(0))
	f.Add([]byte("\x00\x00\x00\x00"), uint8(1), uint8(1))
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00"), uint8(200), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, nodes, routing uint8) {
		rs := []Routing{Hash, RoundRobin, Random, Regional}
		fl, err := New(Config{Nodes: int(nodes)%16 + 1, Policy: limit.FixedWindow{Limit: 3, Window: time.Second},
			Routing: rs[int(routing)%len(rs)], Latency: time.Millisecond, Loss: 0.2})
		if err != nil {
			t.Fatal(err)
		}
		defer fl.Close()
		base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano()
		for len(data) >= 3 {
			dt := int64(binary.BigEndian.Uint16(data)) * int64(time.Millisecond) / 8
			kl := min(int(data[2]%8), len(data)-3)
			key := string(data[3 : 3+kl])
			cost := int64(data[2] >> 6)
			data = data[3+kl:]
			fl.Request(base+dt, key, cost)
		}
		rep := fl.Report()
		for _, tr := range rep.Tiers {
			if tr.Errors == 0 && tr.Admitted-tr.Overshoot+tr.FalseRefusals != rep.Exact.Admitted {
				t.Fatalf("%s: %+v against exact %+v", tr.Tier, tr.Outcome, rep.Exact)
			}
			if tr.Admitted+tr.Refused+tr.Errors != rep.Requests {
				t.Fatalf("%s: %+v of %d requests", tr.Tier, tr.Outcome, rep.Requests)
			}
		}
	})
}
