package gossip

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"net"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// closedSoon reports whether the node closes c within d, before it has
// been sent what it announced: a read ends in EOF or a reset rather than
// the deadline.
func closedSoon(t *testing.T, c net.Conn, d time.Duration) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	var b [64]byte
	for {
		_, err := c.Read(b[:])
		if err == nil {
			continue // an error answer: read on to the close
		}
		return !errors.Is(err, os.ErrDeadlineExceeded)
	}
}

// sealedHead is the head of a sealed stream announcing n bytes.
func sealedHead(n int) []byte {
	b := []byte{mlEncrypt, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(n))
	return b
}

// pushPullHead is the head of a plaintext push/pull announcing nodes
// member records and a user state of n bytes, as memberlist encodes it.
func pushPullHead(t testing.TB, nodes, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteByte(mlPushPull)
	h := struct {
		Nodes        int
		UserStateLen int
		Join         bool
	}{nodes, n, false}
	if err := codec.NewEncoder(&buf, &codec.MsgpackHandle{}).Encode(&h); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A stream is bounded before anything in it is authenticated: one
// announcing more than MaxStateBytes, or more than the streams being read
// leave of StateBytesInFlight, or of a kind no node sends, is closed at
// once, unread, and counted; meanwhile the nodes go on exchanging their
// states. Without the gate memberlist waits (10 s) for the 20 MiB
// announced, buffering what comes.
func TestStreamsAreBoundedBeforeAuthentication(t *testing.T) {
	const mib = 1 << 20
	for _, sealed := range []bool{true, false} {
		name := map[bool]string{true: "sealed", false: "plaintext"}[sealed]
		t.Run(name, func(t *testing.T) {
			tweak := func(c *Config) {
				c.MaxStateBytes, c.StateBytesInFlight = mib, mib+mib/2
				if sealed {
					c.Key = []byte("0123456789abcdef")
				}
			}
			clock := newFakeClock()
			a := newNode(t, "a", clock, nil, tweak)
			b := newNode(t, "b", clock, []string{a.Addr()}, tweak)
			if !b.Warm() {
				t.Fatal("b did not join a through the gate")
			}
			head := func(n int) []byte {
				if sealed {
					return sealedHead(n)
				}
				return pushPullHead(t, 1, n)
			}
			dial := func(p []byte) net.Conn {
				c, err := net.Dial("tcp", a.Addr())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				if _, err := c.Write(p); err != nil {
					t.Fatal(err)
				}
				return c
			}

			// Announcing 20 MiB: closed at once.
			if c := dial(head(20 * mib)); !closedSoon(t, c, 5*time.Second) {
				t.Fatal("a stream announcing 20 MiB was not closed")
			}
			if got := a.Stats().Dropped.Oversize; got != 1 {
				t.Fatalf("oversize streams counted %d, want 1", got)
			}

			// Two streams announcing 0.9 MiB each, neither sending it:
			// the first is read (it holds its share), the second would
			// take the streams over 1.5 MiB and is closed at once.
			held := dial(head(9 * mib / 10))
			eventually(t, "the first stream to be admitted", func() bool {
				return a.gate.heldNow() > 9*mib/10
			})
			if c := dial(head(9 * mib / 10)); !closedSoon(t, c, 5*time.Second) {
				t.Fatal("a stream over state_bytes_in_flight was not closed")
			}
			if got := a.Stats().Dropped.Busy; got != 1 {
				t.Fatalf("busy streams counted %d, want 1", got)
			}
			held.Close()
			eventually(t, "the first stream's share to be given back", func() bool {
				return a.gate.heldNow() == 0
			})

			// What no node sends: a compound message, a label, the
			// other kind of stream (plaintext to a node with a key, sealed
			// to one without).
			other := pushPullHead(t, 1, 10)
			if !sealed {
				other = sealedHead(10)
			}
			before := a.Stats().Dropped
			// And a plaintext push/pull announcing a million members
			// (memberlist would allocate their records before reading).
			for _, p := range [][]byte{{7, 1, 2, 3}, {mlLabel, 3, 'a', 'b', 'c'}, other, pushPullHead(t, 1<<20, 10)} {
				if c := dial(p); !closedSoon(t, c, 5*time.Second) {
					t.Fatalf("stream % x not closed", p)
				}
			}
			// With a key, nothing unsealed is read: all four are
			// unauthenticated.
			malformed, unsealed := uint64(3), uint64(1)
			if sealed {
				malformed, unsealed = 0, 4
			}
			after := a.Stats().Dropped
			if after.Malformed-before.Malformed != malformed || after.Unauthenticated-before.Unauthenticated != unsealed {
				t.Fatalf("dropped %+v, then %+v: want %d more malformed, %d more unauthenticated", before, after, malformed, unsealed)
			}

			// The nodes still exchange their states.
			if n, err := b.ml.Join([]string{a.Addr()}); n != 1 || err != nil {
				t.Fatalf("b's push/pull with a after the attack: %d, %v", n, err)
			}
			eventually(t, "the push/pull's share to be given back", func() bool {
				return a.gate.heldNow() == 0
			})
		})
	}
}

// bytesConn is a connection that reads b, then EOF.
type bytesConn struct {
	net.Conn
	r *bytes.Reader
}

func (c bytesConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// FuzzStreamHead checks that any head is admitted or refused, never
// panics, and that what is admitted may read no more than MaxStateBytes
// (and the 5 bytes of a sealed stream's head), the head included.
func FuzzStreamHead(f *testing.F) {
	f.Add(false, []byte{mlPing, 1, 2})
	f.Add(true, sealedHead(100))
	f.Add(false, pushPullHead(f, 3, 1000))
	f.Add(false, pushPullHead(f, 1<<20, 1<<30))
	f.Add(false, pushPullHead(f, 4096, math.MaxInt64-100)) // a sum that would wrap
	f.Add(false, []byte{mlPushPull, 0xdf, 0xff, 0xff, 0xff, 0xff})
	const per = 1 << 20
	f.Fuzz(func(t *testing.T, sealed bool, b []byte) {
		g := newStreamGate(sealed, per, 2*per, nil, nil)
		head, limit, r := g.head(bytesConn{r: bytes.NewReader(b)})
		if r != nil {
			if limit != 0 || r.reason == "" {
				t.Fatalf("refused (%v) with a limit of %d", r, limit)
			}
			return
		}
		if limit < 0 || limit > per+5 || int64(len(head)) > limit || len(head) > len(b) {
			t.Fatalf("admitted a head of %d bytes for a stream of %d", len(head), limit)
		}
	})
}
