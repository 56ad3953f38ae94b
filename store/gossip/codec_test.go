package gossip

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

const testNow = int64(1_800_000_000) * int64(time.Second)

var testShape = shape{alg: limit.AlgFixedWindow, period: int64(time.Minute), limit: 100}

// encodeOne returns a message with one key and the given counters, all
// of node "a" then "b".
func encodeOne(key string, sh shape, cs ...counter) []byte {
	e := newEncoder(math.MaxInt)
	names := []string{"a", "b", "c"}[:len(cs)]
	e.add(key, sh, names, cs)
	return e.finish(kindDelta, testNow)
}

func TestDecodeRoundTrip(t *testing.T) {
	w := testNow / testShape.period
	buf := encodeOne("k", testShape, counter{Win: w, Cur: 5, Prev: 7}, counter{Win: w - 1, Cur: 3})
	m, err := decode(buf, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if m.stamp != testNow {
		t.Fatalf("stamp %d, want %d", m.stamp, testNow)
	}
	if len(m.entries) != 1 || string(m.entries[0].key) != "k" || m.entries[0].shape != testShape {
		t.Fatalf("entries %+v", m.entries)
	}
	got := m.counters[m.entries[0].lo:m.entries[0].hi]
	if len(got) != 2 || string(m.nodes[got[0].node]) != "a" || got[0].c != (counter{Win: w, Cur: 5, Prev: 7}) ||
		string(m.nodes[got[1].node]) != "b" || got[1].c != (counter{Win: w - 1, Cur: 3}) {
		t.Fatalf("counters %+v", got)
	}
	// Version 1, the same without the stamp, is still read.
	v1 := append([]byte{1, kindDelta, 0, 0, 0, 0}, buf[headerLen+uvarintLen(uint64(testNow)):]...)
	binary.BigEndian.PutUint32(v1[2:headerLen], uint32(len(v1)-headerLen))
	if m, err := decode(v1, testNow); err != nil || m.stamp != 0 || len(m.counters) != 2 {
		t.Fatalf("version 1: %+v, %v", m, err)
	}
}

// The encoder keeps a message under its limit, except for a first key
// that alone is larger.
func TestEncoderRespectsTheByteCap(t *testing.T) {
	e := newEncoder(300)
	w := testNow / testShape.period
	n := 0
	for e.add("key-with-some-length", testShape, []string{"node"}, []counter{{Win: w, Cur: 5}}) {
		n++
	}
	if b := e.finish(kindDelta, testNow); len(b) > 300 || n < 5 {
		t.Fatalf("%d entries in %d bytes", n, len(b))
	}
	if _, err := decode(e.finish(kindDelta, testNow), testNow); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeRefusesBadInput(t *testing.T) {
	w := testNow / testShape.period
	good := encodeOne("k", testShape, counter{Win: w, Cur: 5})
	tb := shape{alg: limit.AlgTokenBucket, period: int64(time.Minute), limit: 10}
	for _, tc := range []struct {
		name string
		buf  []byte
		want error
	}{
		{"empty", nil, errMalformed},
		{"short header", good[:4], errMalformed},
		{"version", append([]byte{9}, good[1:]...), errMalformed},
		{"kind", append([]byte{1, 7}, good[2:]...), errMalformed},
		{"truncated", good[:len(good)-1], errMalformed},
		{"trailing byte", func() []byte {
			b := append(append([]byte{}, good...), 0)
			binary.BigEndian.PutUint32(b[2:6], uint32(len(b)-headerLen))
			return b
		}(), errMalformed},
		{"sliding log", encodeOne("k", shape{alg: limit.AlgSlidingLog, period: 1e9, limit: 5}, counter{Win: 1}), errMalformed},
		{"leaky bucket", encodeOne("k", shape{alg: limit.AlgLeakyBucket, period: 1e9, limit: 5}, counter{Win: 1}), errMalformed},
		{"count beyond bound", encodeOne("k", testShape, counter{Win: w, Cur: countFactor*100 + 1}), errAbsurd},
		{"previous beyond bound", encodeOne("k", testShape, counter{Win: w, Prev: 1 << 50}), errAbsurd},
		{"count near wrap", encodeOne("k", testShape, counter{Win: w, Cur: math.MaxInt64}), errMalformed},
		{"register far ahead", encodeOne("k", tb, counter{Win: w, MCur: 3 * int64(time.Minute)}), errAbsurd},
		{"register on a window", encodeOne("k", testShape, counter{Win: w, MCur: 1}), errMalformed},
		{"window in the future", encodeOne("k", testShape, counter{Win: w + 5, Cur: 1}), errFuture},
		{"zero period", encodeOne("k", shape{alg: limit.AlgFixedWindow, period: 0, limit: 5}, counter{Win: 1}), errMalformed},
		{"zero limit", encodeOne("k", shape{alg: limit.AlgFixedWindow, period: 1e9, limit: 0}, counter{Win: 1}), errMalformed},
		{"no counters", func() []byte {
			e := newEncoder(math.MaxInt)
			e.add("k", testShape, nil, nil)
			return e.finish(kindDelta, testNow)
		}(), errMalformed},
		{"stamp beyond the allowed skew", func() []byte {
			e := newEncoder(math.MaxInt)
			e.add("k", testShape, []string{"a"}, []counter{{Win: w, Cur: 5}})
			return e.finish(kindDelta, testNow+int64(MaxSkew)+1)
		}(), errSkew},
		{"stamp behind the allowed skew", func() []byte {
			e := newEncoder(math.MaxInt)
			e.add("k", testShape, []string{"a"}, []counter{{Win: w, Cur: 5}})
			return e.finish(kindDelta, testNow-int64(MaxSkew)-1)
		}(), errSkew},
		{"huge node count", append(append([]byte{1, 1, 0, 0, 0, 10}, binary.AppendUvarint(nil, 1<<40)...), make([]byte, 5)...), errMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.buf) >= headerLen && tc.name != "trailing byte" && tc.name != "truncated" && tc.name != "huge node count" {
				binary.BigEndian.PutUint32(tc.buf[2:6], uint32(len(tc.buf)-headerLen))
			}
			_, err := decode(tc.buf, testNow)
			if !errors.Is(err, tc.want) {
				t.Errorf("decode: %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := decode(good, testNow); err != nil {
		t.Fatalf("the good message: %v", err)
	}
}
