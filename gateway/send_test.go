package gateway

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/gateway/conns"
)

// sendPair returns the two ends of a loopback TCP connection, the
// accepted one wrapped as the traffic listener wraps it.
func sendPair(t *testing.T, send time.Duration) (*conns.YieldConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c, err := conns.YieldListener{Listener: ln, Send: send}.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*conns.YieldConn), client
}

// fill writes to c until a write fails, and returns how long the
// failing write had been waiting, and its error.
func fill(c io.Writer) (time.Duration, error) {
	buf := make([]byte, 64<<10)
	for {
		start := time.Now()
		if _, err := c.Write(buf); err != nil {
			return time.Since(start), err
		}
	}
}

// A write to a client that reads nothing fails once it has waited
// send_timeout (and at most the slack more); the server's own, earlier
// deadline (write_timeout) still applies; a client that reads steadily,
// for longer than send_timeout in all, is never cut.
func TestSendTimeoutBoundsEachWrite(t *testing.T) {
	const send = 300 * time.Millisecond
	c, _ := sendPair(t, send)
	waited, err := fill(c)
	if !errors.Is(err, os.ErrDeadlineExceeded) || waited < send-10*time.Millisecond || waited > send+conns.DeadlineSlack(send)+2*time.Second {
		t.Fatalf("stalled write: %v after %v, want a deadline after %v", err, waited, send)
	}

	c, _ = sendPair(t, time.Hour)
	c.SetWriteDeadline(time.Now().Add(send))
	if waited, err := fill(c); !errors.Is(err, os.ErrDeadlineExceeded) || waited > send+2*time.Second {
		t.Fatalf("with the server's deadline: %v after %v, want a deadline within %v", err, waited, send)
	}

	c, client := sendPair(t, send)
	// The kernel wakes a writer blocked on a full socket once about
	// half its send buffer is free (as epoll tells nginx): with Linux's
	// autotuned buffers of MiBs, more than a 300ms read. Small buffers
	// keep each wait under one read of the client's.
	c.SetWriteBuffer(64 << 10)
	client.(*net.TCPConn).SetReadBuffer(64 << 10)
	done := make(chan error, 1)
	go func() {
		// 4 MiB in 64 KiB writes through ReadFrom, as fasthttp streams a
		// body, read 64 KiB every 20ms: over a second in all.
		_, err := c.ReadFrom(io.LimitReader(zeros{}, 4<<20))
		c.CloseWrite()
		done <- err
	}()
	buf := make([]byte, 64<<10)
	start, n := time.Now(), 0
	for {
		m, err := io.ReadFull(client, buf)
		n += m
		if err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-done; err != nil || n != 4<<20 {
		t.Fatalf("steady reader: %d bytes, writer %v", n, err)
	}
	if took := time.Since(start); took < send {
		t.Fatalf("the steady read took %v, not longer than send_timeout %v: it proves nothing", took, send)
	}
}
