package gossip

import (
	"net"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
)

// The transport binds TCP and UDP on one port, hands on each packet in a
// buffer of its own size, advertises what it bound, and shuts down
// without leaving its readers blocked.
func TestTransport(t *testing.T) {
	tr, err := newTransport("127.0.0.1", 0, newStreamGate(false, gossipconf.DefaultMaxStateBytes, 2*gossipconf.DefaultMaxStateBytes, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	port := tr.port()
	ip, p, err := tr.FinalAdvertiseAddr("", 0)
	if err != nil || !ip.Equal(net.ParseIP("127.0.0.1")) || p != port {
		t.Fatalf("advertised %v:%d, %v; want 127.0.0.1:%d", ip, p, err, port)
	}
	if ip, p, err := tr.FinalAdvertiseAddr("10.1.2.3", 7000); err != nil || !ip.Equal(net.ParseIP("10.1.2.3")) || p != 7000 {
		t.Fatalf("advertised %v:%d, %v; want 10.1.2.3:7000", ip, p, err)
	}
	if _, _, err := tr.FinalAdvertiseAddr("nonsense", 7000); err == nil {
		t.Fatal("a bad advertise address accepted")
	}

	c, err := net.Dial("udp", tr.udp.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(nil) // empty: skipped
	c.Write([]byte("hello"))
	select {
	case pk := <-tr.PacketCh():
		if string(pk.Buf) != "hello" || cap(pk.Buf) > 64 {
			t.Fatalf("packet %q, capacity %d: want hello in a buffer of its size", pk.Buf, cap(pk.Buf))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no packet")
	}

	sc, err := tr.DialTimeout(tr.tcp.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	sc.Write([]byte{mlPing}) // a stream is handed on once its head is read
	select {
	case conn := <-tr.StreamCh():
		conn.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no stream")
	}

	c.Write([]byte("never read")) // a reader blocked on handing it on
	time.Sleep(20 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- tr.Shutdown() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown blocked")
	}
	if err := tr.Shutdown(); err != nil {
		t.Fatalf("a second Shutdown: %v", err)
	}
}
