package gossip

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-sockaddr"
	"github.com/hashicorp/memberlist"
)

// transport is memberlist's Transport over one UDP socket and one TCP
// listener on the same port, as memberlist's own NetTransport, with one
// difference: a received packet costs a buffer of its own size. The
// NetTransport allocates (and clears) 64 KiB per packet, whatever its
// size; for rounds of 1,400-byte messages to every member that was a
// fifth of a 32-node fleet's CPU, and most of its garbage.
type transport struct {
	udp     *net.UDPConn
	tcp     *net.TCPListener
	packets chan *memberlist.Packet
	streams chan net.Conn
	done    chan struct{}
	shut    atomic.Bool
	wg      sync.WaitGroup
	gate    *streamGate // what a stream may announce (streamgate.go)
}

// udpReadBuffer is the socket receive buffer asked for (as memberlist's
// NetTransport does): a round from every member arrives at once.
const udpReadBuffer = 2 << 20

// newTransport binds TCP and UDP on addr:port; port 0 picks one free for
// both. Streams are admitted by gate.
func newTransport(addr string, port int, gate *streamGate) (*transport, error) {
	ip := net.ParseIP(addr)
	var lastErr error
	for range 10 {
		tl, err := net.ListenTCP("tcp", &net.TCPAddr{IP: ip, Port: port})
		if err != nil {
			return nil, fmt.Errorf("gossip: listen tcp: %w", err)
		}
		bound := tl.Addr().(*net.TCPAddr).Port
		ul, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip, Port: bound})
		if err != nil {
			tl.Close()
			lastErr = fmt.Errorf("gossip: listen udp: %w", err)
			if port == 0 {
				continue // the TCP port's UDP twin was taken: pick another
			}
			return nil, lastErr
		}
		for size := udpReadBuffer; size >= 64<<10; size /= 2 {
			if ul.SetReadBuffer(size) == nil {
				break
			}
		}
		t := &transport{udp: ul, tcp: tl, packets: make(chan *memberlist.Packet), streams: make(chan net.Conn),
			done: make(chan struct{}), gate: gate}
		t.wg.Add(2)
		go t.readPackets()
		go t.acceptStreams()
		return t, nil
	}
	return nil, lastErr
}

// port returns the port bound.
func (t *transport) port() int { return t.tcp.Addr().(*net.TCPAddr).Port }

// FinalAdvertiseAddr returns ip:port, or for an empty ip the address
// bound (a private address when bound to 0.0.0.0), and for port 0 the
// port bound.
func (t *transport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	if port == 0 {
		port = t.port()
	}
	if ip == "" {
		bound := t.tcp.Addr().(*net.TCPAddr).IP
		if !bound.IsUnspecified() {
			return bound, port, nil
		}
		var err error
		if ip, err = sockaddr.GetPrivateIP(); err != nil {
			return nil, 0, fmt.Errorf("gossip: interface addresses: %w", err)
		}
		if ip == "" {
			return nil, 0, errors.New("gossip: bound to 0.0.0.0 and no private address found: set the advertise address")
		}
	}
	a := net.ParseIP(ip)
	if a == nil {
		return nil, 0, fmt.Errorf("gossip: advertise address %q is not an IP address", ip)
	}
	if a4 := a.To4(); a4 != nil {
		a = a4
	}
	return a, port, nil
}

// WriteTo sends b as one UDP packet to addr (host:port).
func (t *transport) WriteTo(b []byte, addr string) (time.Time, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return time.Time{}, err
	}
	_, err = t.udp.WriteTo(b, ua)
	return time.Now(), err
}

// PacketCh returns the packets received.
func (t *transport) PacketCh() <-chan *memberlist.Packet { return t.packets }

// DialTimeout opens a stream (TCP) to addr.
func (t *transport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, timeout)
}

// StreamCh returns the streams accepted.
func (t *transport) StreamCh() <-chan net.Conn { return t.streams }

// Shutdown closes the sockets and waits for the readers.
func (t *transport) Shutdown() error {
	if t.shut.Swap(true) {
		return nil
	}
	close(t.done)
	err := errors.Join(t.udp.Close(), t.tcp.Close())
	t.gate.shutdown()
	t.wg.Wait()
	return err
}

// readPackets reads UDP packets into one reused buffer and hands each on
// in a copy of its own size (memberlist keeps it in its queues).
func (t *transport) readPackets() {
	defer t.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, from, err := t.udp.ReadFrom(buf)
		ts := time.Now()
		if err != nil {
			if t.shut.Load() {
				return
			}
			continue
		}
		if n < 1 {
			continue // memberlist needs at least the message type
		}
		p := &memberlist.Packet{Buf: append([]byte(nil), buf[:n]...), From: from, Timestamp: ts}
		select {
		case t.packets <- p:
		case <-t.done:
			return
		}
	}
}

// acceptStreams accepts TCP connections and hands on those the gate
// admits, each read by a goroutine of its own until then.
func (t *transport) acceptStreams() {
	defer t.wg.Done()
	pause := 5 * time.Millisecond
	for {
		c, err := t.tcp.AcceptTCP()
		if err != nil {
			if t.shut.Load() {
				return
			}
			time.Sleep(pause) // out of descriptors: do not spin
			pause = min(2*pause, time.Second)
			continue
		}
		pause = 5 * time.Millisecond
		if !t.gate.enter(c) {
			c.Close()
			continue
		}
		t.wg.Go(func() {
			s := t.gate.admit(c)
			if s == nil {
				return
			}
			select {
			case t.streams <- s:
			case <-t.done:
				s.Close()
			}
		})
	}
}
