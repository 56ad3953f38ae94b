package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// The stream gate. memberlist reads a stream (TCP: a push/pull's full
// state, a fallback ping) from anyone who connects, before anything in it
// is authenticated: a sealed stream is read whole, up to the length it
// announces (20 MiB), and only then decrypted; a plaintext push/pull
// allocates the user state it announces (20 MiB) and a million node
// records before reading them. 25 connections announcing 20 MiB each and
// sending noise took a node from 31 MB to 1.5 GB. So the transport reads
// each stream's head itself, before memberlist sees the stream, and
//
//   - refuses what no node of this package sends: a label, a compressed
//     stream, a user message, a plaintext stream when there is a secret
//     key (memberlist would refuse it after reading it) and a sealed one
//     when there is none (Dropped.Malformed, Dropped.Unauthenticated);
//   - refuses a stream announcing more than Config.MaxStateBytes
//     (Dropped.Oversize), and one that would take the bytes announced by
//     the streams being read over Config.StateBytesInFlight, or the
//     streams open over maxStreams (Dropped.Busy);
//   - hands memberlist a stream that reads no more than it announced,
//     whose bytes are held against StateBytesInFlight until memberlist
//     closes it.
//
// memberlist reads a stream into buffers it grows as the bytes arrive
// (about three times what was read, garbage included), which the Go
// runtime keeps mapped long after they are freed. So a second after the
// last of the large streams (a MiB or more) closes, the gate has the
// runtime collect and return them to the system (debug.FreeOSMemory):
// at most one full collection a second, and none without large streams.
//
// The head must arrive within headTimeout. Each refusal closes the
// connection at once, having read at most a few bytes, and is logged (the
// gateway throttles those lines: one per kind per interval, with a count).

// memberlist's stream message types (memberlist v0.7.0, net.go).
const (
	mlPing     = 0
	mlPushPull = 6
	mlUser     = 8
	mlCompress = 9
	mlEncrypt  = 10
	mlLabel    = 244
)

const (
	// maxStreams bounds the streams open at once, their heads being read
	// or memberlist reading them (memberlist's own bound on push/pulls is
	// 128).
	maxStreams = 128
	// headTimeout bounds the reading of a stream's head: a peer writes it
	// as soon as it has connected.
	headTimeout = 5 * time.Second
	// streamCost is what a stream is charged for besides what it
	// announces: memberlist's buffers and goroutine.
	streamCost = 16 << 10
	// maxHeadBytes bounds a plaintext push/pull's header (three small
	// integers, in msgpack).
	maxHeadBytes = 128
	// nodeStateBytes bounds one member's record in a plaintext push/pull
	// (a name of maxNameLen bytes, an address, memberlist's 512 bytes of
	// metadata, versions and field names).
	nodeStateBytes = 1024
	// largeStream is the size of a stream whose memory the gate returns
	// to the system once it is closed.
	largeStream = 1 << 20
	// pingBytes bounds a plaintext ping stream.
	pingBytes = 1024
)

// Reasons a stream is refused (their Dropped counts), also the kinds of
// their log lines.
const (
	refuseMalformed = "malformed"
	refuseUnsealed  = "unauthenticated"
	refuseOversize  = "oversize"
	refuseBusy      = "busy"
)

// refusal is why the gate closed a stream.
type refusal struct {
	reason string
	detail string
}

func (r *refusal) Error() string { return r.reason + ": " + r.detail }

func refuse(reason, format string, args ...any) *refusal {
	return &refusal{reason: reason, detail: fmt.Sprintf(format, args...)}
}

// streamGate admits streams (see above). It is safe for concurrent use.
type streamGate struct {
	sealed    bool  // a secret key is set: only sealed streams
	perStream int64 // Config.MaxStateBytes
	inFlight  int64 // Config.StateBytesInFlight
	st        *counters
	logf      func(format string, args ...any) // nil: no log

	freeing atomic.Bool // a FreeOSMemory is scheduled

	mu      sync.Mutex
	held    int64 // bytes charged by the streams open
	open    int   // streams open
	pending map[net.Conn]struct{}
	closed  bool
}

func newStreamGate(sealed bool, perStream, inFlight int64, st *counters, logf func(string, ...any)) *streamGate {
	if st == nil {
		st = new(counters)
	}
	return &streamGate{sealed: sealed, perStream: perStream, inFlight: inFlight, st: st, logf: logf,
		pending: make(map[net.Conn]struct{})}
}

// enter counts a new connection among the open streams, or reports false
// (counted and logged) when maxStreams are.
func (g *streamGate) enter(c net.Conn) bool {
	g.mu.Lock()
	ok := !g.closed && g.open < maxStreams
	if ok {
		g.open++
		g.held += streamCost
		g.pending[c] = struct{}{}
	}
	g.mu.Unlock()
	if !ok {
		g.refused(c, refuse(refuseBusy, "%d streams open already", maxStreams))
	}
	return ok
}

// charge adds n bytes announced by a stream to those held, or reports
// false when that would exceed inFlight.
func (g *streamGate) charge(n int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held+n > g.inFlight {
		return false
	}
	g.held += n
	return true
}

// leave ends a stream that held n announced bytes; a large one has its
// memory returned to the system a second later.
func (g *streamGate) leave(c net.Conn, n int64) {
	g.mu.Lock()
	g.open--
	g.held -= streamCost + n
	delete(g.pending, c)
	g.mu.Unlock()
	if n >= largeStream && g.freeing.CompareAndSwap(false, true) {
		time.AfterFunc(time.Second, func() {
			g.freeing.Store(false)
			debug.FreeOSMemory()
		})
	}
}

// handed marks c's head read: it is memberlist's to close.
func (g *streamGate) handed(c net.Conn) {
	g.mu.Lock()
	delete(g.pending, c)
	g.mu.Unlock()
}

// shutdown closes the connections whose heads are being read, and makes
// enter refuse.
func (g *streamGate) shutdown() {
	g.mu.Lock()
	g.closed = true
	for c := range g.pending {
		c.Close()
	}
	g.mu.Unlock()
}

// refused counts and logs r, the refusal of c.
func (g *streamGate) refused(c net.Conn, r *refusal) {
	switch r.reason {
	case refuseMalformed:
		g.st.malformed.Add(1)
	case refuseUnsealed:
		g.st.unauthenticated.Add(1)
	case refuseOversize:
		g.st.oversize.Add(1)
	case refuseBusy:
		g.st.busy.Add(1)
	}
	if g.logf != nil {
		g.logf("[WARN] gossip: stream refused (%s): %s from=%s", r.reason, r.detail, c.RemoteAddr())
	}
}

// admit reads c's head and returns the stream to hand memberlist, or
// closes c (counted and logged; nil). c has entered the gate.
func (g *streamGate) admit(c net.Conn) net.Conn {
	c.SetReadDeadline(time.Now().Add(headTimeout))
	head, limit, r := g.head(c)
	if r == nil && limit > 0 && !g.charge(limit) {
		r = refuse(refuseBusy, "announces %d bytes, the streams being read %d already (state_bytes_in_flight %d)",
			limit, g.heldNow(), g.inFlight)
	}
	if r != nil || limit == 0 {
		if r != nil {
			g.refused(c, r)
		}
		c.Close()
		g.leave(c, 0)
		return nil
	}
	c.SetReadDeadline(time.Time{})
	g.handed(c)
	return &gatedConn{Conn: c, g: g, n: limit,
		r: io.MultiReader(&headReader{b: head}, &limitedReader{r: c, n: limit - int64(len(head))})}
}

func (g *streamGate) heldNow() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// head reads the head of stream c: it returns the bytes read and what
// the whole stream may amount to (head included), or why it is refused.
// A stream closed before its first byte returns a zero limit and no
// refusal (memberlist ignores it too: a port probe).
func (g *streamGate) head(c net.Conn) ([]byte, int64, *refusal) {
	var b [5]byte
	if _, err := io.ReadFull(c, b[:1]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, nil
		}
		return nil, 0, refuse(refuseMalformed, "no message type: %v", err)
	}
	switch t := b[0]; {
	case t == mlEncrypt:
		if !g.sealed {
			return nil, 0, refuse(refuseUnsealed, "sealed stream, and this node has no secret key")
		}
		if _, err := io.ReadFull(c, b[1:5]); err != nil {
			return nil, 0, refuse(refuseMalformed, "truncated length: %v", err)
		}
		n := int64(binary.BigEndian.Uint32(b[1:5]))
		if n > g.perStream {
			return nil, 0, refuse(refuseOversize, "announces %d bytes, max_state_bytes is %d", n, g.perStream)
		}
		return b[:5], 5 + n, nil
	case g.sealed:
		return nil, 0, refuse(refuseUnsealed, "message type %d not sealed with the secret key", t)
	case t == mlPing:
		return b[:1], pingBytes, nil
	case t == mlPushPull:
		return g.pushPullHead(c, b[0])
	case t == mlLabel, t == mlCompress, t == mlUser:
		return nil, 0, refuse(refuseMalformed, "message type %d, which no node of this fleet sends", t)
	default:
		return nil, 0, refuse(refuseMalformed, "message type %d", t)
	}
}

// pushPullHead reads a plaintext push/pull's header (memberlist's
// pushPullHeader, in msgpack) and bounds the stream by what it announces:
// the member records and the user state (this package's full state).
func (g *streamGate) pushPullHead(c net.Conn, typ byte) ([]byte, int64, *refusal) {
	rec := &recorder{r: io.LimitReader(c, maxHeadBytes), b: []byte{typ}}
	var h struct {
		Nodes        int
		UserStateLen int
		Join         bool
	}
	if err := codec.NewDecoder(rec, &codec.MsgpackHandle{}).Decode(&h); err != nil {
		return nil, 0, refuse(refuseMalformed, "push/pull header: %v", err)
	}
	if h.Nodes < 0 || h.Nodes > maxNodes || h.UserStateLen < 0 {
		return nil, 0, refuse(refuseMalformed, "push/pull header of %d members, %d bytes", h.Nodes, h.UserStateLen)
	}
	// Each term is checked before the sum, which cannot overflow then.
	n := int64(len(rec.b)) + int64(h.Nodes)*nodeStateBytes + min(int64(h.UserStateLen), g.perStream+1)
	if n > g.perStream {
		return nil, 0, refuse(refuseOversize, "announces %d bytes, max_state_bytes is %d", n, g.perStream)
	}
	return rec.b, n, nil
}

// recorder reads from r and keeps what it read.
type recorder struct {
	r io.Reader
	b []byte
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.b = append(r.b, p[:n]...)
	return n, err
}

// headReader returns b, then EOF.
type headReader struct{ b []byte }

func (h *headReader) Read(p []byte) (int, error) {
	if len(h.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, h.b)
	h.b = h.b[n:]
	return n, nil
}

// errStreamLong is the read error of a stream past what it announced.
var errStreamLong = errors.New("gossip: stream longer than it announced")

// limitedReader reads at most n bytes from r, then fails.
type limitedReader struct {
	r io.Reader
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errStreamLong
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// gatedConn is a stream admitted by the gate: it reads the head read
// already and then at most what it announced; closing it gives back what
// it held.
type gatedConn struct {
	net.Conn
	g    *streamGate
	n    int64
	r    io.Reader
	done atomic.Bool
}

func (c *gatedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *gatedConn) Close() error {
	if !c.done.Swap(true) {
		c.g.leave(c.Conn, c.n)
	}
	return c.Conn.Close()
}
